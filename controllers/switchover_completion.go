package controllers

import (
	"time"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
	"github.com/dbpilot/dbpilot/instance/layout"
)

// switchoverGrace is how long a switchover another pass started waits for
// the demoted primary's instance program to answer again (it restarts as
// a replica after its demotion) before the target is promoted without
// knowing what the former primary holds, as a failover would.
const switchoverGrace = 2 * time.Minute

// switchoverStep is how a switchover that another pass started goes on.
type switchoverStep int

const (
	// switchoverWait: look again later.
	switchoverWait switchoverStep = iota
	// switchoverPromote: promote the designated target.
	switchoverPromote
	// switchoverRevert: designate the former primary again.
	switchoverRevert
)

// completeSwitchover decides how a switchover ends once the former primary
// has stopped taking writes while the target is still a replica (the pass
// that demoted it stopped before the promotion: the operator was killed, or
// the target did not catch up in time). The target is promoted only with
// everything the former primary holds, its position as a replica now: a
// target behind it missed the end of the former primary's WAL (binary log),
// which nothing can send it any more (it was not streaming when the former
// primary shut down), and the designation goes back to the former primary,
// so nothing committed is lost. A former primary that does not answer (it
// restarts after its demotion) is waited for, switchoverGrace or the
// failover delay after the designation moved, whichever is later; then the
// target is promoted as a failover would promote it.
func completeSwitchover(engine dbpilotv1alpha1.Engine, target, former layout.InstanceStatus, formerAnswers bool,
	designatedAt, now time.Time, failoverDelay time.Duration) (switchoverStep, time.Duration) {
	if formerAnswers {
		have, ok1 := positionRank(engine, target.Position)
		want, ok2 := positionRank(engine, former.Position)
		switch {
		case ok1 && ok2 && have >= want:
			return switchoverPromote, 0
		case ok1 && ok2:
			return switchoverRevert, 0
		}
	}
	if wait := designatedAt.Add(max(switchoverGrace, failoverDelay)).Sub(now); wait > 0 {
		return switchoverWait, min(wait, failoverPoll)
	}
	return switchoverPromote, 0
}
