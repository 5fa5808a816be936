package desired_test

import (
	"testing"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
	"github.com/dbpilot/dbpilot/controllers/desired"
	"github.com/dbpilot/dbpilot/instance/layout"
)

func TestParametersChangeTheConfigMapOnly(t *testing.T) {
	db := database(dbpilotv1alpha1.EnginePostgres, dbpilotv1alpha1.TierSmall, 2)
	before := desired.ConfigChecksum(db)
	db.Spec.Parameters = map[string]dbpilotv1alpha1.ParameterValue{"work_mem": "64MB", "log_line_prefix": `it's \ here`}
	if after := desired.ConfigChecksum(db); after != before {
		t.Error("spec.parameters change the configuration checksum, which rolls the pods")
	}
	want := "log_line_prefix = 'it''s \\\\ here'\nwork_mem = '64MB'\n"
	if got := desired.ConfigMap(db).Data[layout.PostgresParametersFile]; got != want {
		t.Errorf("parameters file %q, want %q", got, want)
	}
	db.Spec.Parameters = nil
	if got, ok := desired.ConfigMap(db).Data[layout.PostgresParametersFile]; !ok || got != "" {
		t.Errorf("without parameters the file is %q (present: %t), want empty: the instances reset what they set", got, ok)
	}
	mariadb := database(dbpilotv1alpha1.EngineMariaDB, dbpilotv1alpha1.TierSmall, 1)
	if _, ok := desired.ConfigMap(mariadb).Data[layout.PostgresParametersFile]; ok {
		t.Error("a MariaDB ConfigMap has PostgreSQL's parameters file")
	}
}
