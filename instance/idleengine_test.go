package instance

import (
	"context"
	"os"
	"os/exec"
)

// idleEngine is an Engine that does nothing and always succeeds, for the
// test engines to embed beside what they stand in for.
type idleEngine struct{}

func (idleEngine) Initialized() (bool, error)                     { return true, nil }
func (idleEngine) Bootstrap(context.Context, Credentials) error   { return nil }
func (idleEngine) ServerCommand() *exec.Cmd                       { return nil }
func (idleEngine) Ping(context.Context) error                     { return nil }
func (idleEngine) EnsureUsers(context.Context, Credentials) error { return nil }
func (idleEngine) StopSignal() os.Signal                          { return os.Interrupt }
