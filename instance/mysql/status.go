package mysql

import (
	"context"
	"strconv"

	"github.com/dbpilot/dbpilot/instance"
	"github.com/dbpilot/dbpilot/instance/layout"
)

// Status reports the instance: a replica's lag is Seconds_Behind_Master
// (MySQL: Seconds_Behind_Source), its position the GTIDs it has.
func (e *Engine) Status(ctx context.Context) (instance.Status, error) {
	db, err := e.connect(ctx, instance.Credentials{})
	if err != nil {
		return instance.Status{}, err
	}
	defer db.Close()
	s := instance.Status{Role: layout.RolePrimary}
	s.ParametersError, s.PendingRestart = e.parameters.Report()
	if err := db.QueryRowContext(ctx, "SELECT @@version").Scan(&s.Version); err != nil {
		return instance.Status{}, err
	}
	position := "SELECT @@gtid_current_pos"
	if e.Flavor == MySQL {
		position = "SELECT @@global.gtid_executed"
	}
	if err := db.QueryRowContext(ctx, position).Scan(&s.Position); err != nil {
		return instance.Status{}, err
	}
	replica, running, fields, err := replicaFields(ctx, db)
	if err != nil {
		return instance.Status{}, err
	}
	if replica || e.hasReplicaData() {
		s.Role = layout.RoleReplica
		s.Replicating = running
		if lag, err := strconv.ParseFloat(field(fields, "Seconds_Behind_Master", "Seconds_Behind_Source"), 64); err == nil {
			s.LagSeconds = &lag
		}
		if pos := fields["Gtid_Slave_Pos"]; pos != "" {
			s.Position = pos
		}
		return s, nil
	}
	s.Archive = e.archiveStatus()
	return s, nil
}
