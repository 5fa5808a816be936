package localcluster

import (
	"context"
	"fmt"
	"time"
)

// restartTimeout bounds how long a restarted component may take until the
// API server answers again.
const restartTimeout = 90 * time.Second

// Restart stops one control-plane component ("etcd", "kube-apiserver",
// "kube-controller-manager", "kube-scheduler" or "kwok") as Stop would,
// starts it again with the same arguments and state, and waits until the
// API server is ready again: a control-plane fault the clients in front of
// it must ride out. It returns how long the component was down.
func (c *Cluster) Restart(ctx context.Context, name string) (time.Duration, error) {
	index := -1
	for i, p := range c.processes {
		if p.name == name {
			index = i
		}
	}
	if index < 0 {
		return 0, fmt.Errorf("no component named %s", name)
	}
	old := c.processes[index]
	stopped := time.Now()
	if err := old.stop(stopGrace); err != nil {
		return 0, fmt.Errorf("stopping %s: %w", name, err)
	}
	p, err := startProcess(name, old.cmd.Path, old.cmd.Args[1:], c.LogDir())
	if err != nil {
		return 0, err
	}
	c.processes[index] = p
	var apiserver *process
	for _, q := range c.processes {
		if q.name == "kube-apiserver" {
			apiserver = q
		}
	}
	if err := waitAPIServer(ctx, apiserver, c.RESTConfig, restartTimeout); err != nil {
		return 0, fmt.Errorf("API server not ready after restarting %s: %w", name, err)
	}
	return time.Since(stopped), nil
}
