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
	if err := e.reload(ctx); err != nil {
		return fmt.Errorf("reloading the configuration: %w", err)
	}
	e.followedConfig.Applied(content)
	return nil
}

// reload has the server read its configuration file and its certificate
// again.
func (e *Engine) reload(ctx context.Context) error {
	conn, err := e.connect(ctx)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, "SELECT pg_reload_conf()")
	return err
}
