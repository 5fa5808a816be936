package instance

import "context"

// ConfigFollower is an engine that takes its changed configuration file
// while it runs (the kubelet updates the mounted ConfigMap in place, as a
// tier change resized the pod): the settings that can change online do;
// the others wait for the next start, and the engine's status names them.
type ConfigFollower interface {
	// FollowConfig applies the configuration file when it changed since
	// the last call that succeeded; the first call applies it.
	FollowConfig(ctx context.Context) error
}
