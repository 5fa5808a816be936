package instance_test

import (
	"strings"
	"testing"
	"time"
)

// TestReservedApplicationUserRefused starts each engine with a credentials
// Secret naming, as the application user, a user dbpilot keeps for itself
// (the superuser, the replication user): the instance program applies
// nothing and exits saying so, and the next start with another name
// logs in as that user with the superuser's password unchanged.
func TestReservedApplicationUserRefused(t *testing.T) {
	for _, engine := range clientCertificateEngines {
		t.Run(engine.name, func(t *testing.T) {
			u := lookup(t, engine.osUser)
			port := freePort(t)
			certs := newCertificates(t, u)
			args := engine.args(t, u, port, certs.dir)
			creds := argValue(t, args, "--credentials-dir")
			for _, reserved := range []string{map[string]string{"postgres": "postgres", "mariadb": "root"}[engine.name], "dbpilot_replication"} {
				credentials(t, u, creds, reserved, "app-pass", "super-pass")
				p := launch(t, u, engine.path, args...)
				if err := p.waitExit(t, 2*time.Minute); err == nil || !strings.Contains(p.printed(), `the application user may not be \"`+reserved+`\"`) {
					t.Fatalf("application user %q: the program did not refuse it (%v):\n%s", reserved, err, p.printed())
				}
			}
			credentials(t, u, creds, "shop", "app-pass", "super-pass")
			p := start(t, u, engine.path, args...)
			defer p.stop(t)
			config, _ := certs.clientConfig(t)
			if err := engine.login(port, "app-pass", config); err != nil {
				t.Errorf("the application user with another name: %v", err)
			}
		})
	}
}
