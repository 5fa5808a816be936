// Package imagecatalog maps each engine and major version to the image the
// operator runs, and names the operator's own image (which carries the
// instance program). Images are operator configuration, never code: each is
// an environment variable RELATED_IMAGE_<NAME> (the convention OLM lists as
// the CSV's relatedImages and mirrors for disconnected installs), with the
// upstream image as the default.
package imagecatalog

import (
	"fmt"
	"os"
	"sort"
	"strings"
)

// EnvPrefix starts every image variable.
const EnvPrefix = "RELATED_IMAGE_"

// InstanceKey names the operator's image, from which an init container
// copies the instance program into every database pod.
const InstanceKey = "INSTANCE"

// DefaultInstanceImage is the operator's image of this release.
const DefaultInstanceImage = "quay.io/dbpilot/dbpilot:v0.1.0"

// upstream is each engine's upstream repository.
var upstream = map[string]string{
	"postgres": "docker.io/library/postgres",
	"mysql":    "docker.io/library/mysql",
	"mariadb":  "docker.io/library/mariadb",
}

// defaultMajors are the majors with a catalog entry by default: every major
// the API accepts that upstream still publishes.
var defaultMajors = map[string][]string{
	"postgres": {"13", "14", "15", "16", "17"},
	"mysql":    {"8.0", "8.4"},
	"mariadb":  {"10.6", "10.11", "11.4", "11.8"},
}

// Catalog is the operator's image configuration.
type Catalog struct {
	// Instance is the operator's image.
	Instance string
	// engines maps a key such as POSTGRES_15 to an image.
	engines map[string]string
}

// Default is the catalog with the upstream images only.
func Default() Catalog {
	c := Catalog{Instance: DefaultInstanceImage, engines: map[string]string{}}
	for engine, majors := range defaultMajors {
		for _, major := range majors {
			c.engines[Key(engine, major)] = upstream[engine] + ":" + major
		}
	}
	return c
}

// FromEnvironment is the default catalog with every RELATED_IMAGE_ variable
// of environ (as os.Environ returns it) applied over it.
func FromEnvironment(environ []string) (Catalog, error) {
	c := Default()
	for _, kv := range environ {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || !strings.HasPrefix(name, EnvPrefix) {
			continue
		}
		key := strings.TrimPrefix(name, EnvPrefix)
		if value == "" {
			return c, fmt.Errorf("%s is empty", name)
		}
		if key == InstanceKey {
			c.Instance = value
			continue
		}
		c.engines[key] = value
	}
	return c, nil
}

// FromProcess reads the catalog from this process's environment.
func FromProcess() (Catalog, error) { return FromEnvironment(os.Environ()) }

// Key is the variable suffix for an engine's major: POSTGRES_15,
// MARIADB_10_11, MYSQL_8_4.
func Key(engine, major string) string {
	return strings.ToUpper(engine) + "_" + strings.ReplaceAll(major, ".", "_")
}

// Major is the part of a version that names a release series: the first
// component for PostgreSQL ("15" of "15.4"), the first two for MySQL and
// MariaDB ("10.11" of "10.11.9").
func Major(engine, version string) string {
	parts := strings.Split(version, ".")
	n := 2
	if engine == "postgres" {
		n = 1
	}
	if len(parts) < n {
		return version
	}
	return strings.Join(parts[:n], ".")
}

// EngineImage is the image of an engine at a version. The rule:
//   - the version is a major ("15", "10.11") with a catalog entry: that
//     entry, exactly (a tag or a digest);
//   - the version is more precise than a major with an entry ("15.4"): the
//     entry's repository with the version as the tag, so a mirrored
//     repository is still used;
//   - no entry for the major: the upstream repository with the version as
//     the tag.
func (c Catalog) EngineImage(engine, version string) string {
	major := Major(engine, version)
	if image, ok := c.engines[Key(engine, major)]; ok {
		if version == major {
			return image
		}
		return Repository(image) + ":" + version
	}
	return upstream[engine] + ":" + version
}

// Repository strips the tag or digest of an image reference.
func Repository(image string) string {
	if at := strings.Index(image, "@"); at >= 0 {
		image = image[:at]
	}
	if colon := strings.LastIndex(image, ":"); colon > strings.LastIndex(image, "/") {
		image = image[:colon]
	}
	return image
}

// Variables lists the catalog as environment variables, sorted, as the
// operator's Deployment sets them.
func (c Catalog) Variables() []string {
	vars := []string{EnvPrefix + InstanceKey + "=" + c.Instance}
	for key, image := range c.engines {
		vars = append(vars, EnvPrefix+key+"="+image)
	}
	sort.Strings(vars[1:])
	return vars
}
