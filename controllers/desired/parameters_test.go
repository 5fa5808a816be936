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
	before = desired.ConfigChecksum(mariadb)
	mariadb.Spec.Parameters = map[string]dbpilotv1alpha1.ParameterValue{"max_allowed_packet": "64M", "init_connect": `SET @x = 'a "b" \ c'`}
	if after := desired.ConfigChecksum(mariadb); after != before {
		t.Error("MariaDB's spec.parameters change the configuration checksum, which rolls the pods")
	}
	data := desired.ConfigMap(mariadb).Data
	if got, want := data[layout.MySQLParametersFile], `{"init_connect":"SET @x = 'a \"b\" \\ c'","max_allowed_packet":"64M"}`+"\n"; got != want {
		t.Errorf("MariaDB's parameters file %q, want %q", got, want)
	}
	if _, ok := data[layout.PostgresParametersFile]; ok {
		t.Error("a MariaDB ConfigMap has PostgreSQL's parameters file")
	}
	mysql := database(dbpilotv1alpha1.EngineMySQL, dbpilotv1alpha1.TierSmall, 1)
	if data := desired.ConfigMap(mysql).Data; len(data) != 1 {
		t.Errorf("a MySQL ConfigMap has more than its configuration: %v", data)
	}
}
