package imagecatalog

import (
	"os"
	"strings"
	"testing"
)

func TestEngineImage(t *testing.T) {
	c, err := FromEnvironment([]string{
		"RELATED_IMAGE_POSTGRES_15=mirror.example/pg@sha256:abc",
		"RELATED_IMAGE_MARIADB_10_11=mirror.example:5000/mariadb:10.11",
		"RELATED_IMAGE_INSTANCE=mirror.example/dbpilot:v1",
		"PATH=/bin",
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ engine, version, want string }{
		{"postgres", "15", "mirror.example/pg@sha256:abc"},
		{"postgres", "15.4", "mirror.example/pg:15.4"},
		{"postgres", "16", "docker.io/library/postgres:16"},
		{"postgres", "12", "docker.io/library/postgres:12"},
		{"mariadb", "10.11", "mirror.example:5000/mariadb:10.11"},
		{"mariadb", "10.11.9", "mirror.example:5000/mariadb:10.11.9"},
		{"mariadb", "11.4", "docker.io/library/mariadb:11.4"},
		{"mysql", "8.4", "docker.io/library/mysql:8.4"},
		{"mysql", "8.4.2", "docker.io/library/mysql:8.4.2"},
	} {
		if got := c.EngineImage(tc.engine, tc.version); got != tc.want {
			t.Errorf("EngineImage(%s, %s) = %s, want %s", tc.engine, tc.version, got, tc.want)
		}
	}
	if c.Instance != "mirror.example/dbpilot:v1" {
		t.Errorf("Instance = %s", c.Instance)
	}
}

func TestEmptyVariableIsAnError(t *testing.T) {
	if _, err := FromEnvironment([]string{"RELATED_IMAGE_POSTGRES_15="}); err == nil {
		t.Error("an empty RELATED_IMAGE_ variable is accepted")
	}
}

func TestDefaultIsUpstream(t *testing.T) {
	c := Default()
	if got := c.EngineImage("postgres", "16"); got != "docker.io/library/postgres:16" {
		t.Errorf("default postgres 16 = %s", got)
	}
	if c.Instance != DefaultInstanceImage {
		t.Errorf("default instance image = %s", c.Instance)
	}
}

// TestManagerDeploymentListsTheDefaults keeps the operator's Deployment (and
// so the CSV's relatedImages, which OLM builds from it) equal to the
// defaults in code.
func TestManagerDeploymentListsTheDefaults(t *testing.T) {
	data, err := os.ReadFile("../../config/manager/manager.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range Default().Variables() {
		name, value, _ := strings.Cut(v, "=")
		entry := "- name: " + name + "\n          value: " + value + "\n"
		if !strings.Contains(string(data), entry) {
			t.Errorf("config/manager/manager.yaml does not set %s=%s", name, value)
		}
	}
	if got, want := strings.Count(string(data), "name: "+EnvPrefix), len(Default().Variables()); got != want {
		t.Errorf("config/manager/manager.yaml sets %d image variables, the catalog has %d", got, want)
	}
}
