package api_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestInvalidDatabasesAreRejected applies invalid manifests to the API server
// and expects each to be rejected with a message naming the field.
func TestInvalidDatabasesAreRejected(t *testing.T) {
	cases := []struct {
		name      string
		dbName    string
		spec      string
		wantField string
		wantText  string
	}{
		{name: "unknown engine", spec: "  engine: oracle\n  storage: {size: 1Gi}\n", wantField: "spec.engine", wantText: "Unsupported value"},
		{name: "missing engine", spec: "  storage: {size: 1Gi}\n", wantField: "spec.engine", wantText: "Required"},
		{name: "unknown tier", spec: validSpec + "  tier: huge\n", wantField: "spec.tier", wantText: "Unsupported value"},
		{name: "zero replicas", spec: validSpec + "  replicas: 0\n", wantField: "spec.replicas", wantText: "greater than or equal to 1"},
		{name: "too many replicas", spec: validSpec + "  replicas: 100\n", wantField: "spec.replicas", wantText: "less than or equal to 16"},
		{name: "version not a number", spec: "  engine: postgres\n  version: latest\n  storage: {size: 1Gi}\n", wantField: "spec.version", wantText: "should match"},
		{name: "unsupported postgres version", spec: "  engine: postgres\n  version: \"9.6\"\n  storage: {size: 1Gi}\n", wantField: "spec.version", wantText: "not a supported version"},
		{name: "unsupported mysql version", spec: "  engine: mysql\n  version: \"5.7\"\n  storage: {size: 1Gi}\n", wantField: "spec.version", wantText: "not a supported version"},
		{name: "storage too small", spec: "  engine: postgres\n  storage: {size: \"0\"}\n", wantField: "spec.storage.size", wantText: "at least 1Mi"},
		{name: "storage not a quantity", spec: "  engine: postgres\n  storage: {size: lots}\n", wantField: "spec.storage.size", wantText: ""},
		{name: "unknown deletion policy", spec: validSpec + "  deletionPolicy: Snapshot\n", wantField: "spec.deletionPolicy", wantText: "Unsupported value"},
		{name: "autopilot replicas min above max", spec: validSpec + "  autopilot: {mode: Recommend, replicas: {min: 4, max: 2}, tiers: {min: small, max: large}}\n", wantField: "spec.autopilot.replicas.min", wantText: "must not exceed"},
		{name: "autopilot tiers min above max", spec: validSpec + "  autopilot: {mode: Recommend, replicas: {min: 1, max: 2}, tiers: {min: large, max: small}}\n", wantField: "spec.autopilot.tiers.min", wantText: "larger tier"},
		{name: "autopilot on without bounds", spec: validSpec + "  autopilot: {mode: Auto}\n", wantField: "spec.autopilot.replicas", wantText: "required when"},
		{name: "replicas outside autopilot bounds", spec: validSpec + "  replicas: 6\n  autopilot: {mode: Auto, replicas: {min: 1, max: 3}, tiers: {min: small, max: large}}\n", wantField: "spec.replicas", wantText: "within spec.autopilot.replicas"},
		{name: "tier outside autopilot bounds", spec: validSpec + "  tier: xlarge\n  autopilot: {mode: Auto, replicas: {min: 1, max: 3}, tiers: {min: small, max: large}}\n", wantField: "spec.tier", wantText: "within spec.autopilot.tiers"},
		{name: "autopilot cpu target out of range", spec: validSpec + "  autopilot: {mode: \"Off\", targets: {cpuUtilizationPercent: 200}}\n", wantField: "spec.autopilot.targets.cpuUtilizationPercent", wantText: "less than or equal to 95"},
		{name: "autopilot max size below size", spec: validSpec + "  autopilot: {mode: \"Off\", storage: {maxSize: 5Gi}}\n", wantField: "spec.autopilot.storage.maxSize", wantText: "must not be smaller"},
		{name: "cron in words", spec: validSpec + "  backup: {schedule: every hour, destination: {volume: {claimName: b}}}\n", wantField: "spec.backup.schedule", wantText: "should match"},
		{name: "cron minute out of range", spec: validSpec + "  backup: {schedule: \"61 * * * *\", destination: {volume: {claimName: b}}}\n", wantField: "spec.backup.schedule", wantText: "should match"},
		{name: "cron with seven fields", spec: validSpec + "  backup: {schedule: \"0 0 * * * * *\", destination: {volume: {claimName: b}}}\n", wantField: "spec.backup.schedule", wantText: "should match"},
		{name: "cron second out of range", spec: validSpec + "  backup: {schedule: \"60 0 * * * *\", destination: {volume: {claimName: b}}}\n", wantField: "spec.backup.schedule", wantText: "should match"},
		{name: "cron with four fields", spec: validSpec + "  backup: {schedule: \"0 * * *\", destination: {volume: {claimName: b}}}\n", wantField: "spec.backup.schedule", wantText: "should match"},
		{name: "backup with two destinations", spec: validSpec + "  backup: {schedule: \"@daily\", destination: {volume: {claimName: b}, s3: {bucket: bkt, credentialsSecretName: s}}}\n", wantField: "spec.backup.destination", wantText: "exactly one"},
		{name: "backup without destination", spec: validSpec + "  backup: {schedule: \"@daily\", destination: {}}\n", wantField: "spec.backup.destination", wantText: "exactly one"},
		{name: "s3 endpoint not http", spec: validSpec + "  backup: {schedule: \"@daily\", destination: {s3: {bucket: bkt, endpoint: \"ftp://x\", credentialsSecretName: s}}}\n", wantField: "spec.backup.destination.s3.endpoint", wantText: "should match"},
		{name: "zero retention", spec: validSpec + "  backup: {schedule: \"@daily\", retention: 0, destination: {volume: {claimName: b}}}\n", wantField: "spec.backup.retention", wantText: "greater than or equal to 1"},
		{name: "max age without unit", spec: validSpec + "  backup: {schedule: \"@daily\", maxAge: \"30\"}\n", wantField: "spec.backup.maxAge", wantText: "should match"},
		{name: "max age in minutes", spec: validSpec + "  backup: {schedule: \"@daily\", maxAge: 90m}\n", wantField: "spec.backup.maxAge", wantText: "should match"},
		{name: "restore from two sources", spec: validSpec + "  bootstrap: {fromBackup: {databaseBackupName: b, backupName: x, destination: {volume: {claimName: c}}}}\n", wantField: "spec.bootstrap.fromBackup", wantText: "exactly one"},
		{name: "restore by name without destination", spec: validSpec + "  bootstrap: {fromBackup: {backupName: x}}\n", wantField: "spec.bootstrap.fromBackup", wantText: "go together"},
		{name: "target time in lowercase", spec: validSpec + "  bootstrap: {fromBackup: {databaseBackupName: b, targetTime: \"2026-11-28t10:00:00z\"}}\n", wantField: "spec.bootstrap.fromBackup.targetTime", wantText: "should match"},
		{name: "target time not a time", spec: validSpec + "  bootstrap: {fromBackup: {databaseBackupName: b, targetTime: yesterday}}\n", wantField: "spec.bootstrap.fromBackup.targetTime", wantText: ""},
		{name: "name too long", dbName: "a-database-name-that-is-much-too-long-for-children", spec: validSpec, wantField: "metadata.name", wantText: "at most 40 characters"},
		{name: "server certificate in dbpilot's Secret", dbName: "orders", spec: validSpec + "  tls: {serverCertificateSecretName: orders-tls}\n", wantField: "spec.tls.serverCertificateSecretName", wantText: "dbpilot writes those"},
		{name: "server certificate in the authority's Secret", dbName: "orders", spec: validSpec + "  tls: {serverCertificateSecretName: orders-ca}\n", wantField: "spec.tls.serverCertificateSecretName", wantText: "dbpilot writes those"},
		{name: "server certificate in the client certificate's Secret", dbName: "orders", spec: validSpec + "  tls: {serverCertificateSecretName: orders-app-tls}\n", wantField: "spec.tls.serverCertificateSecretName", wantText: "dbpilot writes those"},
		{name: "name starting with a digit", dbName: "1orders", spec: validSpec, wantField: "metadata.name", wantText: "start with a letter"},
		{name: "parameters of mysql", spec: "  engine: mysql\n  parameters: {max_allowed_packet: 64M}\n", wantField: "spec.parameters", wantText: "MySQL takes no parameters yet"},
		{name: "mariadb parameters dbpilot sets", spec: "  engine: mariadb\n  parameters: {max_allowed_packet: 64M, server_id: \"7\"}\n", wantField: "spec.parameters", wantText: "dbpilot sets MariaDB's"},
		{name: "mariadb replication parameters", spec: "  engine: mariadb\n  parameters: {gtid_strict_mode: \"OFF\"}\n", wantField: "spec.parameters", wantText: "dbpilot sets MariaDB's"},
		{name: "mariadb TLS parameters", spec: "  engine: mariadb\n  parameters: {ssl_cipher: HIGH}\n", wantField: "spec.parameters", wantText: "TLS (ssl*)"},
		{name: "parameter name with a space", spec: validSpec + "  parameters: {\"work mem\": 64MB}\n", wantField: "spec.parameters", wantText: "a name is a setting's as the engine shows it"},
		{name: "parameter name in capitals", spec: validSpec + "  parameters: {Work_Mem: 64MB}\n", wantField: "spec.parameters", wantText: "lowercase letters"},
		{name: "parameters dbpilot sets", spec: validSpec + "  parameters: {port: \"5433\", ssl_ciphers: HIGH, work_mem: 64MB, synchronous_commit: \"off\"}\n", wantField: "spec.parameters", wantText: "dbpilot sets listening, files, replication, archiving, recovery, TLS (ssl*), synchronous commit, huge pages and db_user_namespace itself"},
		{name: "parameter value with a newline", spec: validSpec + "  parameters: {log_line_prefix: \"a\\nport = 1\"}\n", wantField: "spec.parameters", wantText: "must not hold a control character"},
		{name: "parameter value too long", spec: validSpec + "  parameters: {application_name: " + strings.Repeat("x", 1025) + "}\n", wantField: "spec.parameters.application_name", wantText: "1024"},
		{name: "node selector key with a space", spec: validSpec + "  scheduling: {nodeSelector: {\"disk type\": ssd}}\n", wantField: "spec.scheduling.nodeSelector", wantText: "a key is a label key"},
		{name: "node selector value with a slash", spec: validSpec + "  scheduling: {nodeSelector: {pool: a/b}}\n", wantField: "spec.scheduling.nodeSelector.pool", wantText: "should match"},
		{name: "node selector value too long", spec: validSpec + "  scheduling: {nodeSelector: {pool: " + strings.Repeat("a", 64) + "}}\n", wantField: "spec.scheduling.nodeSelector.pool", wantText: "63"},
		{name: "toleration operator unknown", spec: validSpec + "  scheduling: {tolerations: [{key: dedicated, operator: In, value: db}]}\n", wantField: "spec.scheduling.tolerations[0].operator", wantText: "Unsupported value"},
		{name: "toleration effect unknown", spec: validSpec + "  scheduling: {tolerations: [{key: dedicated, value: db, effect: Evict}]}\n", wantField: "spec.scheduling.tolerations[0].effect", wantText: "Unsupported value"},
		{name: "toleration Exists with a value", spec: validSpec + "  scheduling: {tolerations: [{key: dedicated, operator: Exists, value: db}]}\n", wantField: "spec.scheduling.tolerations[0]", wantText: "operator Exists matches any value"},
		{name: "toleration without a key", spec: validSpec + "  scheduling: {tolerations: [{value: db, effect: NoSchedule}]}\n", wantField: "spec.scheduling.tolerations[0]", wantText: "needs operator Exists"},
		{name: "toleration seconds without NoExecute", spec: validSpec + "  scheduling: {tolerations: [{key: dedicated, value: db, effect: NoSchedule, tolerationSeconds: 30}]}\n", wantField: "spec.scheduling.tolerations[0]", wantText: "tolerationSeconds goes with effect NoExecute"},
		{name: "toleration key not a label key", spec: validSpec + "  scheduling: {tolerations: [{key: \"a b\", value: db}]}\n", wantField: "spec.scheduling.tolerations[0].key", wantText: "should match"},
		{name: "anti-affinity type unknown", spec: validSpec + "  scheduling: {podAntiAffinity: {type: Always}}\n", wantField: "spec.scheduling.podAntiAffinity.type", wantText: "Unsupported value"},
		{name: "anti-affinity topology key empty", spec: validSpec + "  scheduling: {podAntiAffinity: {type: Required, topologyKey: \"\"}}\n", wantField: "spec.scheduling.podAntiAffinity.topologyKey", wantText: "at least 1"},
		{name: "pod label of dbpilot's", spec: validSpec + "  podMetadata: {labels: {dbpilot.io/role: primary}}\n", wantField: "spec.podMetadata.labels", wantText: "are dbpilot's or Kubernetes' own"},
		{name: "pod label of Kubernetes'", spec: validSpec + "  podMetadata: {labels: {app.kubernetes.io/name: x}}\n", wantField: "spec.podMetadata.labels", wantText: "app.kubernetes.io/ among them"},
		{name: "pod label of the StatefulSet controller's", spec: validSpec + "  podMetadata: {labels: {controller-revision-hash: x}}\n", wantField: "spec.podMetadata.labels", wantText: "controller-revision-hash"},
		{name: "pod label value with a space", spec: validSpec + "  podMetadata: {labels: {team: \"a b\"}}\n", wantField: "spec.podMetadata.labels.team", wantText: "should match"},
		{name: "pod annotation of dbpilot's", spec: validSpec + "  podMetadata: {annotations: {dbpilot.io/fenced: \"true\"}}\n", wantField: "spec.podMetadata.annotations", wantText: "are dbpilot's or Kubernetes' own"},
		{name: "pod annotation key with a space", spec: validSpec + "  podMetadata: {annotations: {\"a b\": x}}\n", wantField: "spec.podMetadata.annotations", wantText: "a key is an annotation key"},
		{name: "pod annotation value too long", spec: validSpec + "  podMetadata: {annotations: {note: " + strings.Repeat("x", 4097) + "}}\n", wantField: "spec.podMetadata.annotations.note", wantText: "4096"},
		{name: "expose as ClusterIP", spec: validSpec + "  expose: {readWrite: {type: ClusterIP}}\n", wantField: "spec.expose.readWrite.type", wantText: "Unsupported value"},
		{name: "expose source ranges on a NodePort", spec: validSpec + "  expose: {readOnly: {type: NodePort, loadBalancerSourceRanges: [10.0.0.0/8]}}\n", wantField: "spec.expose.readOnly", wantText: "loadBalancerSourceRanges goes with type LoadBalancer only"},
		{name: "expose source range not a CIDR", spec: validSpec + "  expose: {readWrite: {loadBalancerSourceRanges: [10.0.0.300/8]}}\n", wantField: "spec.expose.readWrite.loadBalancerSourceRanges", wantText: "are CIDRs"},
		{name: "expose annotation of dbpilot's", spec: validSpec + "  expose: {readWrite: {annotations: {dbpilot.io/role: primary}}}\n", wantField: "spec.expose.readWrite.annotations", wantText: "under dbpilot.io/ are dbpilot's own"},
		{name: "user of dbpilot's", spec: validSpec + "  users: [{name: dbpilot_monitoring}]\n", wantField: "spec.users[0].name", wantText: "dbpilot's own"},
		{name: "user the engine keeps", spec: validSpec + "  users: [{name: report}, {name: postgres}]\n", wantField: "spec.users[1].name", wantText: "the engine's"},
		{name: "user of a pg_ name", spec: validSpec + "  users: [{name: pg_reader}]\n", wantField: "spec.users[0].name", wantText: "starting with pg_"},
		{name: "users on postgres 14", spec: "  engine: postgres\n  version: \"14\"\n  users: [{name: report}]\n", wantField: "spec.users", wantText: "PostgreSQL 15 or later"},
		{name: "user name starting with _", spec: validSpec + "  users: [{name: _report}]\n", wantField: "spec.users[0].name", wantText: "should match"},
		{name: "user name ending with _", spec: validSpec + "  users: [{name: report_}]\n", wantField: "spec.users[0].name", wantText: "should match"},
		{name: "user name with a dash", spec: validSpec + "  users: [{name: report-reader}]\n", wantField: "spec.users[0].name", wantText: "should match"},
		{name: "user name too long", spec: validSpec + "  users: [{name: a_user_name_longer_than_thirty_two_x}]\n", wantField: "spec.users[0].name", wantText: "may not be more than 32"},
		{name: "user listed twice", spec: validSpec + "  users: [{name: report}, {name: report, access: ReadWrite}]\n", wantField: "spec.users[1]", wantText: "Duplicate value"},
		{name: "user of unknown access", spec: validSpec + "  users: [{name: report, access: Admin}]\n", wantField: "spec.users[0].access", wantText: "Unsupported value"},
		{name: "user of no connection", spec: validSpec + "  users: [{name: report, connectionLimit: 0}]\n", wantField: "spec.users[0].connectionLimit", wantText: "should be greater than or equal to 1"},
		{name: "user's password Secret not a name", spec: validSpec + "  users: [{name: report, passwordSecret: {name: other/secret}}]\n", wantField: "spec.users[0].passwordSecret.name", wantText: "should match"},
		{name: "user valid until no instant", spec: validSpec + "  users: [{name: report, validUntil: \"next friday\"}]\n", wantField: "spec.users[0].validUntil", wantText: "date-time"},
		{name: "user valid until in lowercase", spec: validSpec + "  users: [{name: report, validUntil: \"2027-01-31t18:00:00z\"}]\n", wantField: "spec.users[0].validUntil", wantText: "should match"},
		{name: "user of too many connections", spec: validSpec + "  users: [{name: report, connectionLimit: 10001}]\n", wantField: "spec.users[0].connectionLimit", wantText: "should be less than or equal to 10000"},
		{name: "server alt name with an underscore", spec: validSpec + "  tls: {serverAltNames: [db_1.example.com]}\n", wantField: "spec.tls.serverAltNames", wantText: "each is a DNS name"},
		{name: "server alt name a network", spec: validSpec + "  tls: {serverAltNames: [\"203.0.113.0/24\"]}\n", wantField: "spec.tls.serverAltNames", wantText: "or an IP address"},
		{name: "server alt name twice", spec: validSpec + "  tls: {serverAltNames: [db.example.com, db.example.com]}\n", wantField: "spec.tls.serverAltNames[1]", wantText: "Duplicate value"},
		{name: "priority class name in capitals", spec: validSpec + "  scheduling: {priorityClassName: Databases}\n", wantField: "spec.scheduling.priorityClassName", wantText: "should match"},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			name := tc.dbName
			if name == "" {
				name = fmt.Sprintf("invalid-%d", i)
			}
			err := k8sClient.Create(context.Background(), manifest(t, database(name, tc.spec)))
			g.Expect(err).To(HaveOccurred(), "the API server accepted:\n%s", tc.spec)
			g.Expect(err.Error()).To(ContainSubstring(tc.wantField), "the error names the field")
			g.Expect(err.Error()).To(ContainSubstring(tc.wantText))
		})
	}
}

// TestInvalidUpdatesAreRejected creates a valid Database and expects each
// forbidden change to be rejected with a message naming the field.
func TestInvalidUpdatesAreRejected(t *testing.T) {
	base := "  engine: postgres\n  version: \"16.2\"\n  storage: {size: 10Gi, storageClassName: standard}\n  credentialsSecretName: mine\n"
	cases := []struct {
		name      string
		from, to  string
		wantField string
		wantText  string
	}{
		{name: "engine change", from: base, to: "  engine: mysql\n  version: \"8.4\"\n  storage: {size: 10Gi, storageClassName: standard}\n  credentialsSecretName: mine\n", wantField: "spec.engine", wantText: "immutable"},
		{name: "storage shrink", from: base, to: "  engine: postgres\n  version: \"16.2\"\n  storage: {size: 5Gi, storageClassName: standard}\n  credentialsSecretName: mine\n", wantField: "spec.storage.size", wantText: "cannot shrink"},
		{name: "storage class change", from: base, to: "  engine: postgres\n  version: \"16.2\"\n  storage: {size: 10Gi, storageClassName: fast}\n  credentialsSecretName: mine\n", wantField: "spec.storage.storageClassName", wantText: "immutable"},
		{name: "version downgrade", from: base, to: "  engine: postgres\n  version: \"16.1\"\n  storage: {size: 10Gi, storageClassName: standard}\n  credentialsSecretName: mine\n", wantField: "spec.version", wantText: "cannot be downgraded"},
		{name: "major upgrade", from: base, to: "  engine: postgres\n  version: \"17\"\n  storage: {size: 10Gi, storageClassName: standard}\n  credentialsSecretName: mine\n", wantField: "spec.version", wantText: "major version upgrades"},
		{name: "version removed", from: base, to: "  engine: postgres\n  storage: {size: 10Gi, storageClassName: standard}\n  credentialsSecretName: mine\n", wantField: "spec.version", wantText: "cannot be removed"},
		{name: "version set to another major", from: "  engine: postgres\n  storage: {size: 10Gi}\n", to: "  engine: postgres\n  version: \"15\"\n  storage: {size: 10Gi}\n", wantField: "spec.version", wantText: "major"},
		{name: "bootstrap added", from: base, to: base + "  bootstrap: {fromBackup: {databaseBackupName: b}}\n", wantField: "spec.bootstrap", wantText: "immutable"},
		{name: "bootstrap source change", from: base + "  bootstrap: {fromBackup: {databaseBackupName: b}}\n", to: base + "  bootstrap: {fromBackup: {databaseBackupName: c}}\n", wantField: "spec.bootstrap", wantText: "immutable"},
		{name: "credentials secret change", from: base, to: "  engine: postgres\n  version: \"16.2\"\n  storage: {size: 10Gi, storageClassName: standard}\n  credentialsSecretName: other\n", wantField: "spec.credentialsSecretName", wantText: "immutable"},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			ctx := context.Background()
			obj := manifest(t, database(fmt.Sprintf("update-%d", i), tc.from))
			g.Expect(k8sClient.Create(ctx, obj)).To(Succeed())
			t.Cleanup(func() { _ = k8sClient.Delete(ctx, obj) })
			updated := manifest(t, database(obj.GetName(), tc.to))
			updated.SetResourceVersion(obj.GetResourceVersion())
			err := k8sClient.Update(ctx, updated)
			g.Expect(err).To(HaveOccurred(), "the API server accepted the change to:\n%s", tc.to)
			g.Expect(err.Error()).To(ContainSubstring(tc.wantField), "the error names the field")
			g.Expect(err.Error()).To(ContainSubstring(tc.wantText))
		})
	}
}

// TestValidChangesAreAccepted guards against rules that reject too much:
// minor upgrades, growing storage, scaling and the defaults.
func TestValidChangesAreAccepted(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	obj := manifest(t, database("valid", "  engine: postgres\n  version: \"16.2\"\n  storage: {size: 10Gi}\n  autopilot: {mode: Auto, replicas: {min: 1, max: 5}, tiers: {min: small, max: large}, storage: {maxSize: 50Gi}}\n  backup: {schedule: \"0 */6 * * 1-5\", destination: {s3: {bucket: backups, endpoint: \"https://s3.local\", credentialsSecretName: s3}}}\n"))
	g.Expect(k8sClient.Create(ctx, obj)).To(Succeed())
	spec := obj.Object["spec"].(map[string]any)
	g.Expect(spec["replicas"]).To(BeEquivalentTo(1), "replicas defaults to 1")
	g.Expect(spec["tier"]).To(Equal("small"), "tier defaults to small")
	g.Expect(spec["deletionPolicy"]).To(Equal("Retain"), "deletionPolicy defaults to Retain")

	g.Expect(unstructured.SetNestedField(obj.Object, "16.4", "spec", "version")).To(Succeed())
	g.Expect(unstructured.SetNestedField(obj.Object, "20Gi", "spec", "storage", "size")).To(Succeed())
	g.Expect(unstructured.SetNestedField(obj.Object, int64(3), "spec", "replicas")).To(Succeed())
	g.Expect(unstructured.SetNestedField(obj.Object, "large", "spec", "tier")).To(Succeed())
	// A schedule with a seconds field first, as CloudNativePG's.
	g.Expect(unstructured.SetNestedField(obj.Object, "30 0 */6 * * 1-5", "spec", "backup", "schedule")).To(Succeed())
	// A certificate of the user's, in a Secret whose name only looks like dbpilot's.
	g.Expect(unstructured.SetNestedField(obj.Object, "valid-tls-cert", "spec", "tls", "serverCertificateSecretName")).To(Succeed())
	g.Expect(k8sClient.Update(ctx, obj)).To(Succeed())

	// PostgreSQL settings, an extension's among them, with any printable value.
	g.Expect(unstructured.SetNestedStringMap(obj.Object, map[string]string{
		"work_mem": "64MB", "auto_explain.log_min_duration": "250ms", "log_line_prefix": `%m [%p] 'x' \ `,
	}, "spec", "parameters")).To(Succeed())
	g.Expect(k8sClient.Update(ctx, obj)).To(Succeed())

	// Scheduling as a platform team writes it; the defaults fill in.
	g.Expect(unstructured.SetNestedField(obj.Object, map[string]any{
		"nodeSelector":      map[string]any{"pool": "databases", "node.example.com/disk": "nvme"},
		"tolerations":       []any{map[string]any{"key": "dedicated", "value": "databases", "effect": "NoSchedule"}, map[string]any{"operator": "Exists", "effect": "NoExecute", "tolerationSeconds": int64(60)}},
		"podAntiAffinity":   map[string]any{"type": "Required"},
		"priorityClassName": "databases-high",
	}, "spec", "scheduling")).To(Succeed())
	g.Expect(k8sClient.Update(ctx, obj)).To(Succeed())
	g.Expect(unstructured.SetNestedField(obj.Object, map[string]any{
		"labels":      map[string]any{"team": "orders", "cost.example.com/centre": "c-42", "kubernetes-team": "x"},
		"annotations": map[string]any{"sidecar.istio.io/inject": "false", "example.com/note": "any text: with spaces, \"quotes\" and\nlines"},
	}, "spec", "podMetadata")).To(Succeed())
	g.Expect(k8sClient.Update(ctx, obj)).To(Succeed(), "pod labels and annotations of the user's")
	g.Expect(unstructured.SetNestedSlice(obj.Object, []any{
		map[string]any{"name": "report"}, map[string]any{"name": "etl_loader", "access": "ReadWrite", "connectionLimit": int64(10), "validUntil": "2027-01-31T19:00:00+01:00"}, map[string]any{"name": "x9", "access": "Connect"},
	}, "spec", "users")).To(Succeed())
	g.Expect(k8sClient.Update(ctx, obj)).To(Succeed(), "users as an owner writes them")
	users, _, _ := unstructured.NestedSlice(obj.Object, "spec", "users")
	g.Expect(users[0].(map[string]any)["access"]).To(Equal("ReadOnly"), "access defaults to ReadOnly")
	g.Expect(unstructured.SetNestedField(obj.Object, map[string]any{
		"readWrite": map[string]any{"annotations": map[string]any{"service.beta.kubernetes.io/aws-load-balancer-internal": "true"}, "loadBalancerSourceRanges": []any{"203.0.113.0/24", "2001:db8::/32"}},
		"readOnly":  map[string]any{"type": "NodePort"},
	}, "spec", "expose")).To(Succeed())
	g.Expect(unstructured.SetNestedStringSlice(obj.Object, []string{"db.example.com", "*.db.example.com", "203.0.113.10", "2001:db8::10"}, "spec", "tls", "serverAltNames")).To(Succeed())
	g.Expect(k8sClient.Update(ctx, obj)).To(Succeed(), "exposing both Services, the certificate naming the load balancer")
	g.Expect(obj.Object["spec"].(map[string]any)["expose"]).To(HaveKeyWithValue("readWrite", HaveKeyWithValue("type", "LoadBalancer")), "type defaults to LoadBalancer")
	g.Expect(obj.Object["spec"].(map[string]any)["scheduling"]).To(And(
		HaveKeyWithValue("podAntiAffinity", map[string]any{"type": "Required", "topologyKey": "kubernetes.io/hostname"}),
		HaveKeyWithValue("tolerations", ContainElement(HaveKeyWithValue("operator", "Equal"))),
	), "the anti-affinity's topology key and a toleration's operator default")

	mariadb := manifest(t, database("valid-mariadb", "  engine: mariadb\n  parameters: {max_allowed_packet: 64M, sql_mode: \"STRICT_ALL_TABLES,NO_ZERO_DATE\", back_log: \"100\"}\n"))
	g.Expect(k8sClient.Create(ctx, mariadb)).To(Succeed(), "MariaDB variables")

	mysql := manifest(t, database("valid-mysql", "  engine: mysql\n  storage: {size: 1Gi}\n"))
	g.Expect(k8sClient.Create(ctx, mysql)).To(Succeed())
	g.Expect(unstructured.SetNestedField(mysql.Object, "8.4.3", "spec", "version")).To(Succeed())
	g.Expect(k8sClient.Update(ctx, mysql)).To(Succeed(), "setting the default major version is not a major upgrade")

	// The scale subresource moves spec.replicas, as kubectl scale and HPA do.
	g.Expect(k8sClient.SubResource("scale").Update(ctx, obj, client.WithSubResourceBody(scaleTo(obj, 4)))).To(Succeed())
	g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(obj), obj)).To(Succeed())
	g.Expect(obj.Object["spec"].(map[string]any)["replicas"]).To(BeEquivalentTo(4))
}
