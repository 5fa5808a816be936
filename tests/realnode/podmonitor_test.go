package realnode_test

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/yaml"
)

// podMonitorPath is the databases' PodMonitor that users apply.
const podMonitorPath = "../../config/prometheus/databases-podmonitor.yaml"

// podMonitor is the part of a Prometheus Operator PodMonitor dbpilot's uses.
// Decoded strictly, a field added to the PodMonitor and not rendered here
// fails the test.
type podMonitor struct {
	APIVersion string         `json:"apiVersion"`
	Kind       string         `json:"kind"`
	Metadata   map[string]any `json:"metadata"`
	Spec       struct {
		Selector struct {
			MatchLabels map[string]string `json:"matchLabels"`
		} `json:"selector"`
		PodMetricsEndpoints []struct {
			Port   string `json:"port"`
			Path   string `json:"path"`
			Scheme string `json:"scheme"`
			// Interval is left to the test's Prometheus, which scrapes
			// every 5 s to be quick.
			Interval  string `json:"interval"`
			TLSConfig struct {
				InsecureSkipVerify bool `json:"insecureSkipVerify"`
			} `json:"tlsConfig"`
			Authorization struct {
				Type        string `json:"type"`
				Credentials struct {
					Name string `json:"name"`
					Key  string `json:"key"`
				} `json:"credentials"`
			} `json:"authorization"`
			Relabelings []struct {
				SourceLabels []string `json:"sourceLabels"`
				TargetLabel  string   `json:"targetLabel"`
				Regex        string   `json:"regex"`
				Replacement  *string  `json:"replacement"`
				Action       string   `json:"action"`
			} `json:"relabelings"`
		} `json:"podMetricsEndpoints"`
	} `json:"spec"`
}

// podMonitorJob renders the shipped PodMonitor as the Prometheus Operator
// does, into a scrape job of Kubernetes pod discovery (served here by
// http_sd at discoveryURL, for namespace): keep the pods its selector
// matches on the port it names, add namespace and pod, then its own
// relabellings; the credentials it names (the namespace's dbpilot-metrics
// token) are read from tokenFile.
func podMonitorJob(g Gomega, discoveryURL, namespace, tokenFile string) string {
	data, err := os.ReadFile(podMonitorPath)
	g.Expect(err).NotTo(HaveOccurred())
	var m podMonitor
	g.Expect(yaml.UnmarshalStrict(data, &m)).To(Succeed(), "a field of %s this test does not render", podMonitorPath)
	g.Expect(m.Kind).To(Equal("PodMonitor"))
	g.Expect(m.Spec.PodMetricsEndpoints).To(HaveLen(1))
	endpoint := m.Spec.PodMetricsEndpoints[0]
	g.Expect(endpoint.Authorization.Credentials.Name).To(Equal("dbpilot-metrics"), "the token the PodMonitor names")

	var keys, values []string
	for key := range m.Spec.Selector.MatchLabels {
		keys = append(keys, key)
	}
	slices.Sort(keys)
	var sources []string
	for _, key := range keys {
		sources = append(sources, "__meta_kubernetes_pod_label_"+sanitized(key))
		values = append(values, m.Spec.Selector.MatchLabels[key])
	}
	relabel := []map[string]any{
		{"source_labels": append(sources, "__meta_kubernetes_pod_container_port_name"), "regex": strings.Join(append(values, endpoint.Port), ";"), "action": "keep"},
		{"source_labels": []string{"__meta_kubernetes_namespace"}, "target_label": "namespace"},
		{"source_labels": []string{"__meta_kubernetes_pod_name"}, "target_label": "pod"},
	}
	for _, r := range endpoint.Relabelings {
		rule := map[string]any{"source_labels": r.SourceLabels}
		if r.TargetLabel != "" {
			rule["target_label"] = r.TargetLabel
		}
		if r.Regex != "" {
			rule["regex"] = r.Regex
		}
		if r.Replacement != nil {
			rule["replacement"] = *r.Replacement
		}
		if r.Action != "" {
			rule["action"] = strings.ToLower(r.Action)
		}
		relabel = append(relabel, rule)
	}
	job := map[string]any{
		"job_name":        "dbpilot-databases",
		"scheme":          endpoint.Scheme,
		"metrics_path":    endpoint.Path,
		"tls_config":      map[string]any{"insecure_skip_verify": endpoint.TLSConfig.InsecureSkipVerify},
		"authorization":   map[string]any{"type": endpoint.Authorization.Type, "credentials_file": tokenFile},
		"http_sd_configs": []map[string]any{{"url": fmt.Sprintf("%s/pods?namespace=%s", discoveryURL, namespace), "refresh_interval": "5s"}},
		"relabel_configs": relabel,
	}
	// JSON is YAML: one flow-style line, listed as a scrape config.
	out, err := json.Marshal(job)
	g.Expect(err).NotTo(HaveOccurred())
	return "- " + string(out) + "\n"
}

// sanitized is a label name as Kubernetes discovery writes it: every
// character not allowed in a Prometheus label name becomes "_".
func sanitized(name string) string {
	return strings.Map(func(r rune) rune {
		if r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return '_'
	}, name)
}
