package desired_test

import (
	"flag"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
	"github.com/dbpilot/dbpilot/controllers/desired"
	"github.com/dbpilot/dbpilot/internal/imagecatalog"
)

var update = flag.Bool("update", false, "rewrite the golden files from the builders' output")

// goldenDatabases cover each engine, one and several pods, a tier above the
// default, a storage class and deletionPolicy Delete, backups to S3 and to
// the claim dbpilot creates, a restore, and scheduling (node selector,
// tolerations, required anti-affinity per zone, a PriorityClass) and pod
// labels and annotations of the user's, and Services exposing the primary
// and the replicas outside the cluster.
func goldenDatabases() map[string]*dbpilotv1alpha1.Database {
	meta := func(name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Namespace: "shop", UID: "0b6f0a8e-2f0e-4a7e-9f4c-000000000001"}
	}
	return map[string]*dbpilotv1alpha1.Database{
		"postgres-single": {ObjectMeta: meta("orders"), Spec: dbpilotv1alpha1.DatabaseSpec{
			Engine: dbpilotv1alpha1.EnginePostgres, Replicas: ptr.To[int32](1), Tier: dbpilotv1alpha1.TierSmall,
			Storage: &dbpilotv1alpha1.StorageSpec{Size: ptr.To(resource.MustParse("20Gi"))},
			Backup: &dbpilotv1alpha1.BackupSpec{Schedule: "0 3 * * *", Retention: 7, Destination: &dbpilotv1alpha1.BackupDestination{
				S3: &dbpilotv1alpha1.S3Destination{Bucket: "backups", Endpoint: "https://s3.example.com", CredentialsSecretName: "s3-credentials"}}},
			TLS: &dbpilotv1alpha1.TLSSpec{Required: true},
			Expose: &dbpilotv1alpha1.ExposeSpec{ReadWrite: &dbpilotv1alpha1.ExposedService{
				Type:                     corev1.ServiceTypeLoadBalancer,
				Annotations:              map[string]dbpilotv1alpha1.AnnotationValue{"service.beta.kubernetes.io/aws-load-balancer-internal": "true"},
				LoadBalancerSourceRanges: []string{"203.0.113.0/24", "2001:db8::/32"},
			}},
			Parameters: map[string]dbpilotv1alpha1.ParameterValue{
				"work_mem": "64MB", "log_line_prefix": `%m [%p] 'app' \ `, "shared_preload_libraries": "pg_stat_statements,auto_explain",
			},
		}},
		"postgres-restored": {ObjectMeta: restored(meta("orders-copy")), Spec: dbpilotv1alpha1.DatabaseSpec{
			Engine: dbpilotv1alpha1.EnginePostgres, Replicas: ptr.To[int32](2), Tier: dbpilotv1alpha1.TierSmall,
			Bootstrap: &dbpilotv1alpha1.BootstrapSpec{FromBackup: &dbpilotv1alpha1.FromBackup{DatabaseBackupName: "orders-20261123030000"}},
		}},
		"mysql-replicated": {ObjectMeta: meta("billing"), Spec: dbpilotv1alpha1.DatabaseSpec{
			Engine: dbpilotv1alpha1.EngineMySQL, Version: "8.4.3", Replicas: ptr.To[int32](3), Tier: dbpilotv1alpha1.TierLarge,
			Storage:        &dbpilotv1alpha1.StorageSpec{Size: ptr.To(resource.MustParse("100Gi")), StorageClassName: ptr.To("fast")},
			DeletionPolicy: dbpilotv1alpha1.DeletionPolicyDelete,
			Expose: &dbpilotv1alpha1.ExposeSpec{
				ReadWrite: &dbpilotv1alpha1.ExposedService{Type: corev1.ServiceTypeNodePort},
				ReadOnly:  &dbpilotv1alpha1.ExposedService{Type: corev1.ServiceTypeLoadBalancer},
			},
			Scheduling: &dbpilotv1alpha1.SchedulingSpec{
				NodeSelector: map[string]dbpilotv1alpha1.LabelValue{"pool": "databases", "example.com/disk": "nvme"},
				Tolerations: []dbpilotv1alpha1.Toleration{
					{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "databases", Effect: corev1.TaintEffectNoSchedule},
					{Key: "node.kubernetes.io/unreachable", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](30)},
				},
				PodAntiAffinity:   &dbpilotv1alpha1.PodAntiAffinitySpec{Type: dbpilotv1alpha1.PodAntiAffinityRequired, TopologyKey: corev1.LabelTopologyZone},
				PriorityClassName: "databases",
			},
		}},
		"mariadb-user-credentials": {ObjectMeta: meta("catalog"), Spec: dbpilotv1alpha1.DatabaseSpec{
			Engine: dbpilotv1alpha1.EngineMariaDB, Replicas: ptr.To[int32](2), Tier: dbpilotv1alpha1.Tier2XLarge,
			Storage: &dbpilotv1alpha1.StorageSpec{Size: ptr.To(resource.MustParse("1Ti"))}, CredentialsSecretName: "catalog-own",
			Backup: &dbpilotv1alpha1.BackupSpec{Schedule: "@daily", Retention: 3},
			TLS:    &dbpilotv1alpha1.TLSSpec{Required: true},
			PodMetadata: &dbpilotv1alpha1.PodMetadata{
				Labels:      map[string]dbpilotv1alpha1.LabelValue{"team": "catalog", "cost.example.com/centre": "c-42"},
				Annotations: map[string]dbpilotv1alpha1.AnnotationValue{"sidecar.istio.io/inject": "false", "backup.velero.io/backup-volumes": "data"},
			},
		}},
	}
}

// restored annotates a Database with the restore source the reconciler
// resolves: a scheduled backup of orders, to a point in time.
func restored(m metav1.ObjectMeta) metav1.ObjectMeta {
	m.Annotations = map[string]string{dbpilotv1alpha1.AnnotationRestoreSource: `{"destination":{"s3":{"bucket":"backups","prefix":"shop/orders",` +
		`"endpoint":"https://s3.example.com","credentialsSecretName":"s3-credentials"}},"backupName":"orders-20261123030000-1a2b3c4d",` +
		`"targetTime":"2026-11-23T04:30:00Z"}`}
	return m
}

// TestGolden renders every child of each golden Database and compares it
// with testdata/<name>.yaml. Run with -update after an intended change, and
// review the diff: a changed pod template restarts every database.
func TestGolden(t *testing.T) {
	for name, db := range goldenDatabases() {
		t.Run(name, func(t *testing.T) {
			objects := []any{
				desired.ConfigMap(db),
				desired.HeadlessService(db),
				desired.ReadWriteService(db),
				desired.ReadOnlyService(db, db.EffectiveReplicas()),
				desired.StatefulSet(db, desired.StatefulSetOptions{Images: imagecatalog.Default()}),
			}
			external := desired.ExternalServices(db, db.EffectiveReplicas())
			for _, name := range slices.Sorted(maps.Keys(external)) {
				if external[name] != nil {
					objects = append(objects, external[name])
				}
			}
			if db.CreatesBackupClaim() {
				objects = append(objects, desired.BackupClaim(db))
			}
			if desired.NeedsPodDisruptionBudget(db.EffectiveReplicas()) {
				objects = append(objects, desired.PodDisruptionBudget(db, db.EffectiveReplicas()))
			}
			if desired.NeedsPrimaryPodDisruptionBudget(db, db.EffectiveReplicas()) {
				objects = append(objects, desired.PrimaryPodDisruptionBudget(db))
			}
			var got []byte
			for _, obj := range objects {
				data, err := yaml.Marshal(obj)
				if err != nil {
					t.Fatalf("marshalling %T: %v", obj, err)
				}
				got = append(append(got, "---\n"...), data...)
			}
			path := filepath.Join("testdata", name+".yaml")
			if *update {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("reading golden file (run with -update to create it): %v", err)
			}
			if string(got) != string(want) {
				t.Errorf("%s differs from the builders' output; run `go test ./controllers/desired -update` and review the diff", path)
			}
		})
	}
}
