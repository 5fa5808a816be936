// Package prometheus_test checks dbpilot's Prometheus material under
// config/prometheus with the real promtool: the alert rules' syntax, and
// each alert firing and staying quiet on crafted series.
package prometheus_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/dbpilot/dbpilot/internal/promserver"
)

const rulesPath = "../../config/prometheus/rules.yaml"

// rule is an alerting rule of the PrometheusRule.
type rule struct {
	Alert       string            `json:"alert"`
	Expr        string            `json:"expr"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
}

// readRules reads the PrometheusRule's groups, as a rule file has them, and
// its alerts by name.
func readRules(t *testing.T) (groups any, alerts map[string]rule) {
	t.Helper()
	data, err := os.ReadFile(rulesPath)
	if err != nil {
		t.Fatal(err)
	}
	var generic struct {
		Kind string `json:"kind"`
		Spec struct {
			Groups any `json:"groups"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(data, &generic); err != nil {
		t.Fatal(err)
	}
	var typed struct {
		Spec struct {
			Groups []struct {
				Rules []rule `json:"rules"`
			} `json:"groups"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(data, &typed); err != nil {
		t.Fatalf("%s: %v", rulesPath, err)
	}
	if generic.Kind != "PrometheusRule" {
		t.Fatalf("%s is a %q, not a PrometheusRule", rulesPath, generic.Kind)
	}
	alerts = map[string]rule{}
	for _, g := range typed.Spec.Groups {
		for _, r := range g.Rules {
			alerts[r.Alert] = r
		}
	}
	return generic.Spec.Groups, alerts
}

// labelTemplate is the only template the annotations use.
var labelTemplate = regexp.MustCompile(`\{\{\s*\$labels\.(\w+)\s*\}\}`)

// expand fills an annotation's {{ $labels.x }} as Prometheus does.
func expand(t *testing.T, alert, text string, labels map[string]any) string {
	t.Helper()
	out := labelTemplate.ReplaceAllStringFunc(text, func(m string) string {
		value, _ := labels[labelTemplate.FindStringSubmatch(m)[1]].(string)
		return value
	})
	if regexp.MustCompile(`\{\{`).MatchString(out) {
		t.Fatalf("alert %s: an annotation uses a template other than {{ $labels.x }}, which this test cannot expand: %q", alert, text)
	}
	return out
}

// TestAlertRules runs promtool on the rules and on a firing and a quiet
// case of every alert.
func TestAlertRules(t *testing.T) {
	if _, err := os.Stat(promserver.PromtoolBinary); err != nil {
		t.Fatalf("promtool is missing (run `make deps`): %v", err)
	}
	groups, alerts := readRules(t)
	for name, r := range alerts {
		if r.Labels["severity"] == "" || r.Annotations["summary"] == "" || r.Annotations["description"] == "" {
			t.Errorf("alert %s lacks a severity, a summary or a description", name)
		}
	}
	for _, want := range []string{"DatabaseDown", "NoPrimary", "ReplicaNotStreaming", "ReplicationLagHigh", "BackupFailed", "BackupTooOld",
		"WALArchivingFailing", "StorageAlmostFull", "StoragePredictedFull", "ConnectionsNearLimit", "OperatorReconcileErrors", "AutopilotHolding", "ServerCertificateExpiring", "ClientCertificateExpiring", "PrimaryDrainBlocked", "DatabaseDegraded", "DatabaseUsersPending"} {
		if _, ok := alerts[want]; !ok {
			t.Errorf("there is no alert %s", want)
		}
	}

	dir := t.TempDir()
	rulesFile := filepath.Join(dir, "dbpilot.rules.yaml")
	writeYAML(t, rulesFile, map[string]any{"groups": groups})
	if out, err := exec.Command(promserver.PromtoolBinary, "check", "rules", rulesFile).CombinedOutput(); err != nil {
		t.Fatalf("promtool check rules: %v\n%s", err, out)
	}

	data, err := os.ReadFile("testdata/alerts.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var cases map[string]any
	if err := yaml.Unmarshal(data, &cases); err != nil {
		t.Fatal(err)
	}
	cases["rule_files"] = []string{filepath.Base(rulesFile)}
	fires, quiet := map[string]bool{}, map[string]bool{}
	for _, test := range cases["tests"].([]any) {
		for _, c := range test.(map[string]any)["alert_rule_test"].([]any) {
			check := c.(map[string]any)
			name := check["alertname"].(string)
			r, ok := alerts[name]
			if !ok {
				t.Errorf("testdata/alerts.yaml tests alert %s, which the rules do not have", name)
				continue
			}
			expected, _ := check["exp_alerts"].([]any)
			if len(expected) == 0 {
				quiet[name] = true
			} else {
				fires[name] = true
			}
			for _, e := range expected {
				alert := e.(map[string]any)
				labels, _ := alert["exp_labels"].(map[string]any)
				annotations := map[string]string{}
				for key, text := range r.Annotations {
					annotations[key] = expand(t, name, text, labels)
				}
				alert["exp_annotations"] = annotations
			}
		}
	}
	for name := range alerts {
		if !fires[name] || !quiet[name] {
			t.Errorf("alert %s needs a case where it fires (%v) and one where it stays quiet (%v)", name, fires[name], quiet[name])
		}
	}
	testFile := filepath.Join(dir, "alerts_test.yaml")
	writeYAML(t, testFile, cases)
	out, err := exec.Command(promserver.PromtoolBinary, "test", "rules", testFile).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool test rules: %v\n%s", err, out)
	}
	t.Logf("promtool test rules:\n%s", out)
}

func writeYAML(t *testing.T, path string, v any) {
	t.Helper()
	data, err := yaml.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}
