package instance

import (
	"context"
	"os"
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
	// the server runs. It says why when it refuses them.
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
