package e2e_test

import (
	"encoding/json"
	"testing"

	. "github.com/onsi/gomega"
)

// TestExplainDescribesEveryField reads the schema kubectl explain reads,
// the API server's OpenAPI v3 document of dbpilot.io/v1alpha1, and expects
// a description on every field of both kinds (metadata is Kubernetes'
// own); kubectl explain shows one.
func TestExplainDescribesEveryField(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	// The API server publishes a CRD's schema a little after it is
	// established.
	var raw []byte
	g.Eventually(func(g Gomega) {
		paths, err := clientset.Discovery().OpenAPIV3().Paths()
		g.Expect(err).NotTo(HaveOccurred())
		group, ok := paths["apis/dbpilot.io/v1alpha1"]
		g.Expect(ok).To(BeTrue(), "the API server publishes dbpilot.io/v1alpha1")
		raw, err = group.Schema("application/json")
		g.Expect(err).NotTo(HaveOccurred())
	}, convergeTimeout, pollInterval).Should(Succeed())
	var document struct {
		Components struct {
			Schemas map[string]map[string]any `json:"schemas"`
		} `json:"components"`
	}
	g.Expect(json.Unmarshal(raw, &document)).To(Succeed())

	for kind, least := range map[string]int{"Database": 100, "DatabaseBackup": 20} {
		schema, ok := document.Components.Schemas["io.dbpilot.v1alpha1."+kind]
		g.Expect(ok).To(BeTrue(), "the document has %s", kind)
		var fields, undescribed []string
		walkFields(kind, schema, func(path string, field map[string]any) {
			fields = append(fields, path)
			if description, _ := field["description"].(string); description == "" {
				undescribed = append(undescribed, path)
			}
		})
		g.Expect(len(fields)).To(BeNumerically(">=", least), "%s's fields: %v", kind, fields)
		g.Expect(undescribed).To(BeEmpty(), "fields of %s that kubectl explain cannot describe", kind)
	}
	g.Expect(kubectl(g, "explain", "databases.spec.tls.serverCertificateSecretName")).
		To(ContainSubstring("serverCertificateSecretName names a Secret in the Database's"))
}

// walkFields calls visit with the path of every field under schema but
// metadata, depth first.
func walkFields(path string, schema map[string]any, visit func(string, map[string]any)) {
	properties, _ := schema["properties"].(map[string]any)
	for name, value := range properties {
		field, _ := value.(map[string]any)
		if field == nil || (path+"."+name == "Database.metadata" || path+"."+name == "DatabaseBackup.metadata") {
			continue
		}
		visit(path+"."+name, field)
		walkFields(path+"."+name, field, visit)
	}
	if items, ok := schema["items"].(map[string]any); ok {
		walkFields(path+"[]", items, visit)
	}
}
