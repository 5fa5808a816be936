package instance

import (
	"context"
	"os"
	"slices"
	"sync"
)

// ConfigFollower is an engine that takes its changed configuration file
// while it runs (the kubelet updates the mounted ConfigMap in place, as a
// tier change resized the pod): the settings that can change online do;
// the others wait for the next start, and the engine's status names them.
type ConfigFollower interface {
	// FollowConfig applies the configuration file when it changed since
	// the last call that succeeded; the first call applies it.
	FollowConfig(ctx context.Context) error
}

// ParametersFollower is an engine that runs with the Database's
// spec.parameters: it applies them before its server starts, and as they
// change while it runs.
type ParametersFollower interface {
	// FollowParameters applies the parameters when they changed since
	// the last call that applied or refused them; running says whether
	// the server runs. It says why, in the server's words, when it
	// refuses them.
	FollowParameters(ctx context.Context, running bool) (refused string, err error)
}

// FollowedFile is a configuration file an engine follows: what it last
// applied of it. The zero value has applied nothing.
type FollowedFile struct {
	applied *string
}

// Changed reads the file at path and returns its content, and whether it
// differs from what was last applied (always, before the first apply).
func (f *FollowedFile) Changed(path string) (string, bool, error) {
	content, err := os.ReadFile(path)
	if err != nil {
		return "", false, err
	}
	return string(content), f.applied == nil || string(content) != *f.applied, nil
}

// Applied records content as applied.
func (f *FollowedFile) Applied(content string) { f.applied = &content }

// ParametersState is what an engine last made of the Database's
// spec.parameters: the content it last applied or refused, why it refuses
// it, and the settings that wait for the server's next start. The
// supervisor's loop writes it; the status handler reads what it reports.
type ParametersState struct {
	// seen is the content last applied or refused; nil before the first.
	// Only the supervisor's loop uses it.
	seen *string

	mu       sync.Mutex
	refused  string
	awaiting []string
}

// Seen reports whether content was the last applied or refused.
func (s *ParametersState) Seen(content string) bool {
	return s.seen != nil && *s.seen == content
}

// Settle records content as applied (refused empty) or refused, and why.
func (s *ParametersState) Settle(content, refused string) {
	s.seen = &content
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refused = refused
}

// Await adds settings that wait for the server's next start.
func (s *ParametersState) Await(names []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.awaiting = slices.Compact(slices.Sorted(slices.Values(append(s.awaiting, names...))))
}

// Report is why the parameters are refused ("" when they are not), and
// the settings Await recorded.
func (s *ParametersState) Report() (refused string, awaiting []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.refused, slices.Clone(s.awaiting)
}
