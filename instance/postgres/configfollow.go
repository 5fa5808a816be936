package postgres

import (
	"context"
	"fmt"
)

// FollowConfig has the server reload its configuration file when the file
// changed: work_mem, effective_cache_size and the like apply at once;
// shared_buffers and max_connections wait for a restart (Status names
// them).
func (e *Engine) FollowConfig(ctx context.Context) error {
	if e.ConfigFile == "" {
		return nil
	}
	content, changed, err := e.followedConfig.Changed(e.ConfigFile)
	if err != nil || !changed {
		return err
	}
	conn, err := e.connect(ctx)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "SELECT pg_reload_conf()"); err != nil {
		return fmt.Errorf("reloading the configuration: %w", err)
	}
	e.followedConfig.Applied(content)
	return nil
}
