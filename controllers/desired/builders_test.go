package desired_test

import (
	"path"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/utils/ptr"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
	"github.com/dbpilot/dbpilot/controllers/desired"
	"github.com/dbpilot/dbpilot/instance/layout"
	"github.com/dbpilot/dbpilot/internal/imagecatalog"
)

func database(engine dbpilotv1alpha1.Engine, tier dbpilotv1alpha1.Tier, replicas int32) *dbpilotv1alpha1.Database {
	db := &dbpilotv1alpha1.Database{Spec: dbpilotv1alpha1.DatabaseSpec{
		Engine: engine, Tier: tier, Replicas: ptr.To(replicas),
		Storage: &dbpilotv1alpha1.StorageSpec{Size: ptr.To(resource.MustParse("1Gi"))},
	}}
	db.Name, db.Namespace = "db", "ns"
	return db
}

func TestEngineConfigFollowsTier(t *testing.T) {
	cases := []struct {
		engine dbpilotv1alpha1.Engine
		tier   dbpilotv1alpha1.Tier
		want   []string
	}{
		{dbpilotv1alpha1.EnginePostgres, dbpilotv1alpha1.TierSmall, []string{"max_connections = 100", "shared_buffers = 256MB", "effective_cache_size = 768MB"}},
		{dbpilotv1alpha1.EnginePostgres, dbpilotv1alpha1.TierLarge, []string{"max_connections = 400", "shared_buffers = 1024MB", "effective_cache_size = 3072MB"}},
		{dbpilotv1alpha1.EnginePostgres, dbpilotv1alpha1.Tier2XLarge, []string{"max_connections = 1600", "shared_buffers = 4096MB", "effective_cache_size = 12288MB"}},
		{dbpilotv1alpha1.EngineMySQL, dbpilotv1alpha1.TierSmall, []string{"max_connections = 100", "innodb_buffer_pool_size = 512M"}},
		{dbpilotv1alpha1.EngineMariaDB, dbpilotv1alpha1.TierXLarge, []string{"max_connections = 800", "innodb_buffer_pool_size = 5734M"}},
	}
	for _, tc := range cases {
		_, content := desired.EngineConfig(database(tc.engine, tc.tier, 1))
		for _, line := range tc.want {
			if !strings.Contains(content, line+"\n") {
				t.Errorf("%s %s: config lacks %q:\n%s", tc.engine, tc.tier, line, content)
			}
		}
	}
}

// TestMySQLConfigFileIsWhereTheInstanceFollowsIt: the instance program of a
// MariaDB pod follows the configuration at layout.MySQLConfigFile, which
// must be where the ConfigMap's file is mounted.
func TestMySQLConfigFileIsWhereTheInstanceFollowsIt(t *testing.T) {
	for _, engine := range []dbpilotv1alpha1.Engine{dbpilotv1alpha1.EngineMariaDB, dbpilotv1alpha1.EngineMySQL} {
		profile, _ := engine.Profile()
		name, _ := desired.EngineConfig(database(engine, dbpilotv1alpha1.TierSmall, 1))
		if got := path.Join(profile.ConfigDir, name); got != layout.MySQLConfigFile {
			t.Errorf("%s: the configuration is at %s, the instance program follows %s", engine, got, layout.MySQLConfigFile)
		}
	}
}

func TestConfigChecksumChangesOnlyWithConfig(t *testing.T) {
	small := database(dbpilotv1alpha1.EnginePostgres, dbpilotv1alpha1.TierSmall, 1)
	scaled := database(dbpilotv1alpha1.EnginePostgres, dbpilotv1alpha1.TierSmall, 3)
	large := database(dbpilotv1alpha1.EnginePostgres, dbpilotv1alpha1.TierLarge, 1)
	if desired.ConfigChecksum(small) != desired.ConfigChecksum(scaled) {
		t.Errorf("scaling changed the config checksum, which would roll every pod")
	}
	if desired.ConfigChecksum(small) == desired.ConfigChecksum(large) {
		t.Errorf("a tier change kept the config checksum, so pods would not pick up the new tuning")
	}
}

func TestTemplateHashIgnoresReplicas(t *testing.T) {
	one := desired.TemplateHash(desired.PodTemplate(database(dbpilotv1alpha1.EngineMySQL, dbpilotv1alpha1.TierSmall, 1), imagecatalog.Default(), desired.Restarts{}))
	five := desired.TemplateHash(desired.PodTemplate(database(dbpilotv1alpha1.EngineMySQL, dbpilotv1alpha1.TierSmall, 5), imagecatalog.Default(), desired.Restarts{}))
	if one != five {
		t.Errorf("the pod template depends on replicas: scaling would roll pods")
	}
	medium := desired.TemplateHash(desired.PodTemplate(database(dbpilotv1alpha1.EngineMySQL, dbpilotv1alpha1.TierMedium, 1), imagecatalog.Default(), desired.Restarts{}))
	if one == medium {
		t.Errorf("the pod template does not depend on the tier")
	}
}

func TestRestartsChangeTheTemplateOnlyWhenSet(t *testing.T) {
	db := database(dbpilotv1alpha1.EnginePostgres, dbpilotv1alpha1.TierSmall, 2)
	none := desired.PodTemplate(db, imagecatalog.Default(), desired.Restarts{})
	for key := range none.Annotations {
		if key == desired.AnnotationParametersRestart || key == dbpilotv1alpha1.AnnotationRestart {
			t.Errorf("no restart asked, yet the template has %s: every pod would roll on upgrade", key)
		}
	}
	requested := desired.PodTemplate(db, imagecatalog.Default(), desired.Restarts{Requested: "2026-11-28T05:00:00Z"})
	if got := requested.Annotations[dbpilotv1alpha1.AnnotationRestart]; got != "2026-11-28T05:00:00Z" {
		t.Errorf("%s on the template = %q, want the value asked for", dbpilotv1alpha1.AnnotationRestart, got)
	}
	again := desired.PodTemplate(db, imagecatalog.Default(), desired.Restarts{Requested: "2026-11-28T06:00:00Z"})
	hashes := map[string]bool{desired.TemplateHash(none): true, desired.TemplateHash(requested): true, desired.TemplateHash(again): true}
	if len(hashes) != 3 {
		t.Errorf("asking for a restart, or another one, keeps the template hash: the pods would not roll")
	}
}

func TestPodIsRestricted(t *testing.T) {
	for _, engine := range []dbpilotv1alpha1.Engine{dbpilotv1alpha1.EnginePostgres, dbpilotv1alpha1.EngineMySQL, dbpilotv1alpha1.EngineMariaDB} {
		spec := desired.PodTemplate(database(engine, dbpilotv1alpha1.TierSmall, 1), imagecatalog.Default(), desired.Restarts{}).Spec
		if !*spec.SecurityContext.RunAsNonRoot || *spec.SecurityContext.SeccompProfile.Type != "RuntimeDefault" {
			t.Errorf("%s: pod security context is not restricted", engine)
		}
		if len(spec.InitContainers) == 0 {
			t.Errorf("%s: no init container copies the instance program", engine)
		}
		for _, c := range append(spec.InitContainers, spec.Containers...) {
			sc := c.SecurityContext
			if *sc.AllowPrivilegeEscalation || len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL" || !*sc.ReadOnlyRootFilesystem {
				t.Errorf("%s/%s: container may escalate or keeps capabilities", engine, *c.Name)
			}
		}
	}
}

func TestReadOnlyServiceFallsBackToPrimary(t *testing.T) {
	for replicas, role := range map[int32]string{1: dbpilotv1alpha1.RolePrimary, 2: dbpilotv1alpha1.RoleReplica} {
		svc := desired.ReadOnlyService(database(dbpilotv1alpha1.EnginePostgres, dbpilotv1alpha1.TierSmall, replicas), replicas)
		if got := svc.Spec.Selector[dbpilotv1alpha1.LabelRole]; got != role {
			t.Errorf("replicas=%d: read-only Service selects %q, want %q", replicas, got, role)
		}
	}
}

func TestClaimTemplateKeepsLiveSize(t *testing.T) {
	db := database(dbpilotv1alpha1.EnginePostgres, dbpilotv1alpha1.TierSmall, 1)
	db.Spec.Storage.Size = ptr.To(resource.MustParse("50Gi"))
	sts := desired.StatefulSet(db, desired.StatefulSetOptions{ClaimSize: resource.MustParse("10Gi")})
	got := (*sts.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests)["storage"]
	if got.String() != "10Gi" {
		t.Errorf("claim template size = %s, want the live 10Gi (templates are immutable)", got.String())
	}
}

func TestEngineConfigTakesRaisedConnections(t *testing.T) {
	db := database(dbpilotv1alpha1.EnginePostgres, dbpilotv1alpha1.TierSmall, 1)
	conns := int32(150)
	db.Spec.Autopilot = &dbpilotv1alpha1.AutopilotSpec{Mode: dbpilotv1alpha1.AutopilotAuto,
		Replicas: &dbpilotv1alpha1.ReplicaBounds{Min: 1, Max: 2}, Tiers: &dbpilotv1alpha1.TierBounds{Min: dbpilotv1alpha1.TierSmall, Max: dbpilotv1alpha1.TierSmall}}
	db.Status.Autopilot = &dbpilotv1alpha1.AutopilotStatus{Recommendation: &dbpilotv1alpha1.AutopilotRecommendation{Tier: dbpilotv1alpha1.TierSmall, MaxConnections: &conns}}
	if _, content := desired.EngineConfig(db); !strings.Contains(content, "max_connections = 150\n") {
		t.Errorf("raised connections not rendered:\n%s", content)
	}
}

func TestSynchronousReplicationConfig(t *testing.T) {
	for _, tc := range []struct {
		engine      dbpilotv1alpha1.Engine
		count       int32
		want, never []string
	}{
		{dbpilotv1alpha1.EnginePostgres, 0, nil, []string{"synchronous_standby_names"}},
		{dbpilotv1alpha1.EnginePostgres, 2, []string{"synchronous_standby_names = 'ANY 2 (*)'", "synchronous_commit = on"}, nil},
		{dbpilotv1alpha1.EngineMariaDB, 0, nil, []string{"rpl_semi_sync"}},
		// The primary's side is turned on by the instance program once its
		// own users exist, never by the file.
		{dbpilotv1alpha1.EngineMariaDB, 1, []string{"rpl_semi_sync_slave_enabled = ON", "rpl_semi_sync_master_wait_point = AFTER_SYNC", "rpl_semi_sync_master_timeout = 2592000000"}, []string{"rpl_semi_sync_master_enabled"}},
		{dbpilotv1alpha1.EngineMySQL, 1, []string{"plugin-load-add = semisync_source.so", "rpl_semi_sync_replica_enabled = ON"}, []string{"rpl_semi_sync_source_enabled"}},
	} {
		db := database(tc.engine, dbpilotv1alpha1.TierSmall, 3)
		if tc.count > 0 {
			db.Spec.Replication = &dbpilotv1alpha1.ReplicationSpec{Synchronous: &dbpilotv1alpha1.SynchronousReplication{Count: tc.count}}
		}
		_, content := desired.EngineConfig(db)
		for _, line := range tc.want {
			if !strings.Contains(content, line+"\n") {
				t.Errorf("%s synchronous %d: config lacks %q:\n%s", tc.engine, tc.count, line, content)
			}
		}
		for _, s := range tc.never {
			if strings.Contains(content, s) {
				t.Errorf("%s synchronous %d: config has %q:\n%s", tc.engine, tc.count, s, content)
			}
		}
		args := strings.Join(desired.PodTemplate(db, imagecatalog.Default(), desired.Restarts{}).Spec.Containers[0].Args, " ")
		if semiSync := strings.Contains(args, "--semi-sync"); semiSync != (tc.count > 0 && tc.engine != dbpilotv1alpha1.EnginePostgres) {
			t.Errorf("%s synchronous %d: instance arguments %s", tc.engine, tc.count, args)
		}
	}
}

// TestStatefulSetsShareNoMaps: the client decodes the API server's answer
// into the applied configuration, so two StatefulSets being applied at once
// (one per reconcile worker) must not share a map, nor requests with limits:
// a shared one is written concurrently, which crashes the manager.
func TestStatefulSetsShareNoMaps(t *testing.T) {
	db := database(dbpilotv1alpha1.EnginePostgres, dbpilotv1alpha1.TierSmall, 2)
	first := desired.StatefulSet(db, desired.StatefulSetOptions{Images: imagecatalog.Default()})
	const marker = corev1.ResourceName("example.com/written-by-another-worker")
	var containers []corev1ac.ContainerApplyConfiguration
	containers = append(containers, first.Spec.Template.Spec.InitContainers...)
	containers = append(containers, first.Spec.Template.Spec.Containers...)
	for _, c := range containers {
		if c.Resources == nil || c.Resources.Requests == nil || c.Resources.Limits == nil {
			t.Fatalf("container %s has no requests or limits", *c.Name)
		}
		(*c.Resources.Requests)[marker] = resource.MustParse("1")
		if _, shared := (*c.Resources.Limits)[marker]; shared {
			t.Errorf("container %s: requests and limits are one map", *c.Name)
		}
	}
	second := desired.StatefulSet(db, desired.StatefulSetOptions{Images: imagecatalog.Default()})
	for _, c := range append(second.Spec.Template.Spec.InitContainers, second.Spec.Template.Spec.Containers...) {
		if _, shared := (*c.Resources.Requests)[marker]; shared {
			t.Errorf("container %s: its requests are shared between StatefulSets", *c.Name)
		}
	}
}
