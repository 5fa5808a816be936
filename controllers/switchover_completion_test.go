package controllers

import (
	"testing"
	"time"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
	"github.com/dbpilot/dbpilot/instance/layout"
)

// TestASwitchoverNeverPromotesATargetBehindTheFormerPrimary replays the
// chaos run's loss: the target (at 0/80076C0) missed the end of the former
// primary's WAL (0/90000A0, its position as a replica after its demotion),
// and the operator that demoted it died before the promotion. The next
// pass must give the primary back, not promote the target.
func TestASwitchoverNeverPromotesATargetBehindTheFormerPrimary(t *testing.T) {
	designated := time.Date(2026, 11, 26, 0, 56, 1, 0, time.UTC)
	at := func(position string) layout.InstanceStatus {
		return layout.InstanceStatus{Role: layout.RoleReplica, Position: position}
	}
	for _, tc := range []struct {
		name          string
		engine        dbpilotv1alpha1.Engine
		target        layout.InstanceStatus
		former        layout.InstanceStatus
		formerAnswers bool
		now           time.Time
		delay         time.Duration
		want          switchoverStep
	}{
		{"target behind: revert", dbpilotv1alpha1.EnginePostgres, at("0/80076C0"), at("0/90000A0"), true, designated.Add(19 * time.Second), 0, switchoverRevert},
		{"target caught up: promote", dbpilotv1alpha1.EnginePostgres, at("0/90000A0"), at("0/90000A0"), true, designated.Add(time.Second), 0, switchoverPromote},
		{"target ahead: promote", dbpilotv1alpha1.EnginePostgres, at("0/9000100"), at("0/90000A0"), true, designated.Add(time.Second), 0, switchoverPromote},
		{"MariaDB target behind: revert", dbpilotv1alpha1.EngineMariaDB, at("0-1-41"), at("0-1-42"), true, designated.Add(time.Second), 0, switchoverRevert},
		{"former restarting: wait", dbpilotv1alpha1.EnginePostgres, at("0/80076C0"), layout.InstanceStatus{}, false, designated.Add(10 * time.Second), 0, switchoverWait},
		{"former silent past the grace: promote", dbpilotv1alpha1.EnginePostgres, at("0/80076C0"), layout.InstanceStatus{}, false, designated.Add(switchoverGrace), 0, switchoverPromote},
		{"former silent within a longer failover delay: wait", dbpilotv1alpha1.EnginePostgres, at("0/80076C0"), layout.InstanceStatus{}, false, designated.Add(time.Minute), 2 * time.Minute, switchoverWait},
		{"a position that does not parse: wait", dbpilotv1alpha1.EnginePostgres, at("0/80076C0"), at("unknown"), true, designated.Add(time.Second), 0, switchoverWait},
	} {
		t.Run(tc.name, func(t *testing.T) {
			step, wait := completeSwitchover(tc.engine, tc.target, tc.former, tc.formerAnswers, designated, tc.now, tc.delay)
			if step != tc.want {
				t.Fatalf("step %d, want %d", step, tc.want)
			}
			if step == switchoverWait && (wait <= 0 || wait > failoverPoll) {
				t.Errorf("waits %s", wait)
			}
		})
	}
}
