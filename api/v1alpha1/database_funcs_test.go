package v1alpha1

import (
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

func int32Ptr(v int32) *int32 { return &v }

func autopilotDatabase(mode AutopilotMode, rec *AutopilotRecommendation) *Database {
	db := &Database{Spec: DatabaseSpec{
		Engine: EnginePostgres, Replicas: int32Ptr(2), Tier: TierMedium,
		Autopilot: &AutopilotSpec{Mode: mode, Replicas: &ReplicaBounds{Min: 1, Max: 4}, Tiers: &TierBounds{Min: TierSmall, Max: TierLarge}},
	}}
	db.Status.Autopilot = &AutopilotStatus{Recommendation: rec}
	return db
}

func TestEffectiveReplicasAndTier(t *testing.T) {
	cases := []struct {
		name         string
		db           *Database
		wantReplicas int32
		wantTier     Tier
	}{
		{"no autopilot uses the spec", &Database{Spec: DatabaseSpec{Replicas: int32Ptr(3), Tier: TierLarge}}, 3, TierLarge},
		{"defaults when unset", &Database{}, 1, TierSmall},
		{"recommend mode uses the spec", autopilotDatabase(AutopilotRecommend, &AutopilotRecommendation{Replicas: int32Ptr(4), Tier: TierLarge}), 2, TierMedium},
		{"auto mode applies the recommendation", autopilotDatabase(AutopilotAuto, &AutopilotRecommendation{Replicas: int32Ptr(4), Tier: TierLarge}), 4, TierLarge},
		{"auto mode clamps to the bounds", autopilotDatabase(AutopilotAuto, &AutopilotRecommendation{Replicas: int32Ptr(9), Tier: Tier2XLarge}), 4, TierLarge},
		{"auto mode clamps from below", autopilotDatabase(AutopilotAuto, &AutopilotRecommendation{Replicas: int32Ptr(0)}), 1, TierMedium},
		{"no recommendation falls back to the spec", autopilotDatabase(AutopilotAuto, nil), 2, TierMedium},
		{"unknown tier falls back to the spec", autopilotDatabase(AutopilotAuto, &AutopilotRecommendation{Tier: "huge"}), 2, TierMedium},
	}
	for _, tc := range cases {
		if got := tc.db.EffectiveReplicas(); got != tc.wantReplicas {
			t.Errorf("%s: EffectiveReplicas = %d, want %d", tc.name, got, tc.wantReplicas)
		}
		if got := tc.db.EffectiveTier(); got != tc.wantTier {
			t.Errorf("%s: EffectiveTier = %s, want %s", tc.name, got, tc.wantTier)
		}
	}
}

// TestChildNamesFitAtMaximumNameLength checks the CRD's 40-character name
// limit keeps every derived name a valid DNS label, including the revision
// label the StatefulSet controller puts on pods.
func TestChildNamesFitAtMaximumNameLength(t *testing.T) {
	db := &Database{}
	db.Name = "a" + strings.Repeat("b", 38) + "c"
	names := []string{
		db.PodName(15), db.HeadlessServiceName(), db.ReadWriteServiceName(), db.ReadOnlyServiceName(),
		db.ConfigMapName(), db.DesignationConfigMapName(), db.CredentialsSecretName(), db.ReplicationSecretName(), db.PodDisruptionBudgetName(),
		db.CertificateAuthoritySecretName(), db.ServerCertificateSecretName(), db.ClientAuthoritySecretName(), db.ApplicationCertificateSecretName(),
		db.ClaimName(15),
		db.StatefulSetName() + "-" + strings.Repeat("f", 10), // controller-revision-hash
	}
	for _, name := range names {
		if errs := validation.IsDNS1035Label(name); len(errs) > 0 {
			t.Errorf("%s: %v", name, errs)
		}
	}
}

func TestTierTableGrowsWithEachStep(t *testing.T) {
	tiers := Tiers()
	for i := 1; i < len(tiers); i++ {
		prev, _ := tiers[i-1].Size()
		next, _ := tiers[i].Size()
		if next.CPU.Cmp(prev.CPU) <= 0 || next.Memory.Cmp(prev.Memory) <= 0 || next.MaxConnections <= prev.MaxConnections || next.Capacity != 2*prev.Capacity {
			t.Errorf("tier %s is not a doubling of %s", tiers[i], tiers[i-1])
		}
		if tiers[i].Index() != i || TierAt(i) != tiers[i] {
			t.Errorf("tier %s index %d", tiers[i], tiers[i].Index())
		}
	}
	if TierAt(-3) != TierSmall || TierAt(99) != Tier2XLarge || Tier("huge").Index() != -1 {
		t.Errorf("TierAt or Index do not clamp")
	}
}

func TestEngineDefaults(t *testing.T) {
	for engine, want := range map[Engine]string{EnginePostgres: "16", EngineMySQL: "8.4", EngineMariaDB: "11.4"} {
		db := &Database{Spec: DatabaseSpec{Engine: engine}}
		if got := db.EngineVersion(); got != want {
			t.Errorf("%s: default version %s, want %s", engine, got, want)
		}
	}
}

func TestEffectiveMaxConnections(t *testing.T) {
	rec := func(tier Tier, conns int32) *Database {
		db := autopilotDatabase(AutopilotAuto, &AutopilotRecommendation{Replicas: int32Ptr(2), Tier: tier, MaxConnections: &conns})
		return db
	}
	cases := []struct {
		name string
		db   *Database
		want int32
	}{
		{"no recommendation: the tier's", &Database{Spec: DatabaseSpec{Tier: TierLarge}}, 400},
		{"raised within the limit", rec(TierMedium, 300), 300},
		{"clamped to twice the tier's", rec(TierMedium, 900), 400},
		{"never below the tier's", rec(TierMedium, 10), 200},
		{"a recommendation for another tier does not apply", func() *Database {
			db := rec(TierLarge, 700)
			db.Spec.Autopilot.Tiers.Max = TierMedium
			return db
		}(), 200},
	}
	for _, tc := range cases {
		if got := tc.db.EffectiveMaxConnections(); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
}

// TestServerNamesAreValidAtMaximumLengths checks every name of the server
// certificate is a valid DNS name (a wildcard for the pods) for the longest
// Database name in the longest namespace, and that the Services' hosts the
// instances connect to are among them.
func TestServerNamesAreValidAtMaximumLengths(t *testing.T) {
	db := &Database{}
	db.Name = "a" + strings.Repeat("b", 38) + "c"
	db.Namespace = strings.Repeat("n", 63)
	names := db.ServerNames()
	for _, name := range names {
		if errs := validation.IsWildcardDNS1123Subdomain(name); strings.HasPrefix(name, "*.") && len(errs) > 0 {
			t.Errorf("%s: %v", name, errs)
		} else if errs := validation.IsDNS1123Subdomain(name); !strings.HasPrefix(name, "*.") && len(errs) > 0 {
			t.Errorf("%s: %v", name, errs)
		}
	}
	for _, host := range []string{db.ServiceHost(db.ReadWriteServiceName()), db.ServiceHost(db.ReadOnlyServiceName()), db.ReadWriteServiceName(),
		"*." + db.ServiceHost(db.HeadlessServiceName())} {
		found := false
		for _, name := range names {
			found = found || name == host
		}
		if !found {
			t.Errorf("%s is not among the server names %v", host, names)
		}
	}
}

// TestServerNamesTakeTheAltNames checks spec.tls.serverAltNames follow the
// cluster's names, each once.
func TestServerNamesTakeTheAltNames(t *testing.T) {
	db := &Database{Spec: DatabaseSpec{TLS: &TLSSpec{ServerAltNames: []string{"db.example.com", "203.0.113.10", "orders-rw"}}}}
	db.Name, db.Namespace = "orders", "shop"
	names := db.ServerNames()
	if got := names[len(names)-2:]; !slices.Equal(got, []string{"db.example.com", "203.0.113.10"}) {
		t.Errorf("the names end with %v, want the alt names db.example.com and 203.0.113.10", got)
	}
	count := 0
	for _, name := range names {
		if name == "orders-rw" {
			count++
		}
	}
	if count != 1 {
		t.Errorf("orders-rw is named %d times", count)
	}
}
