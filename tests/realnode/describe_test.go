package realnode_test

import (
	"bufio"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"

	. "github.com/onsi/gomega"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
	"github.com/dbpilot/dbpilot/internal/localcluster"
)

// describeDatabase is what `kubectl describe database` prints for db,
// with the kubectl the control plane was built with.
func describeDatabase(g Gomega, db *dbpilotv1alpha1.Database) string {
	bin, err := localcluster.DefaultBinDir()
	g.Expect(err).NotTo(HaveOccurred())
	out, err := exec.Command(filepath.Join(bin, "kubectl"), "--kubeconfig", cluster.KubeconfigPath,
		"describe", "database", "--namespace", db.Namespace, db.Name).CombinedOutput()
	g.Expect(err).NotTo(HaveOccurred(), "%s", out)
	return string(out)
}

// describedEvents are the reasons and messages of the Events section of
// kubectl describe's output, one line each.
func describedEvents(describe string) []string {
	_, events, found := strings.Cut(describe, "\nEvents:")
	if !found {
		return nil
	}
	var lines []string
	for _, line := range strings.Split(events, "\n") {
		line = strings.TrimSpace(line)
		if line != "" && !strings.HasPrefix(line, "Type ") && !strings.HasPrefix(line, "----") {
			lines = append(lines, line)
		}
	}
	return lines
}

// operatorLogLine is one JSON line of the in-process operator's log.
type operatorLogLine struct {
	Logger     string `json:"logger"`
	Message    string `json:"msg"`
	Controller string `json:"controller"`
	// ReconcileID is set on the lines of one reconcile; a controller's
	// own lines (starting, stopping) have none.
	ReconcileID string `json:"reconcileID"`
	Database    *struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"database"`
}

// databaseLogLines returns the operator's log lines about one Database or
// its backups (the lines of the Database and DatabaseBackup controllers'
// reconciles, and the auto-pilot's per-Database lines), and those of them
// that do not name the Database they are about.
func databaseLogLines(g Gomega) (lines []operatorLogLine, unnamed []string) {
	scanner := bufio.NewScanner(strings.NewReader(operatorLog.String()))
	scanner.Buffer(make([]byte, 0, 1<<20), 1<<20)
	for scanner.Scan() {
		text := scanner.Text()
		var line operatorLogLine
		if json.Unmarshal([]byte(text), &line) != nil {
			continue
		}
		perDatabase := (line.Controller == "database" || line.Controller == "databasebackup") && line.ReconcileID != "" ||
			strings.HasPrefix(line.Logger, "autopilot") && line.Message != autopilotCycleFailed
		if !perDatabase {
			continue
		}
		lines = append(lines, line)
		if line.Database == nil || line.Database.Name == "" || line.Database.Namespace == "" {
			unnamed = append(unnamed, text)
		}
	}
	g.Expect(scanner.Err()).NotTo(HaveOccurred())
	return lines, unnamed
}

// autopilotCycleFailed is the auto-pilot's one line about the whole fleet:
// it could not list the Databases or their pods.
const autopilotCycleFailed = "Auto-pilot cycle failed"
