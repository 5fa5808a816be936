// Package randomspec draws random Databases whose spec the API server
// accepts, for fuzzing the builders and for dry-run applying what they
// build. It knows the API's rules as the CRD states them, not the
// builders: what it draws is input, never an expected output.
package randomspec

import (
	"fmt"
	"math/rand/v2"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
)

// maxNameLength is the CRD's limit on a Database's name.
const maxNameLength = 40

var (
	engines = []dbpilotv1alpha1.Engine{dbpilotv1alpha1.EnginePostgres, dbpilotv1alpha1.EngineMySQL, dbpilotv1alpha1.EngineMariaDB}
	tiers   = []dbpilotv1alpha1.Tier{dbpilotv1alpha1.TierSmall, dbpilotv1alpha1.TierMedium, dbpilotv1alpha1.TierLarge,
		dbpilotv1alpha1.TierXLarge, dbpilotv1alpha1.Tier2XLarge}
	schedules = []string{"@daily", "@hourly", "0 3 * * *", "*/5 * * * *", "15,45 1-5 * * mon", "0 0 1 1 *", "30 2 ? * 0"}
	sizes     = []string{"1Mi", "512Mi", "1Gi", "10Gi", "100Gi", "1Ti", "1500M", "2.5Gi"}
)

// Database draws a Database named after name (made valid: lowercase
// letters, digits and '-', starting with a letter, at most 40 characters)
// in namespace.
func Database(r *rand.Rand, namespace, name string) *dbpilotv1alpha1.Database {
	engine := engines[r.IntN(len(engines))]
	replicas := int32(1 + r.IntN(16))
	tier := r.IntN(len(tiers))
	db := &dbpilotv1alpha1.Database{
		ObjectMeta: metav1.ObjectMeta{Name: ValidName(name), Namespace: namespace, UID: types.UID(fmt.Sprintf("00000000-0000-4000-8000-%012x", r.Uint64()>>16))},
		Spec: dbpilotv1alpha1.DatabaseSpec{
			Engine:   engine,
			Version:  version(r, engine),
			Replicas: ptr.To(replicas),
			Tier:     tiers[tier],
		},
	}
	if r.IntN(4) > 0 {
		db.Spec.Storage = &dbpilotv1alpha1.StorageSpec{Size: ptr.To(resource.MustParse(sizes[r.IntN(len(sizes))]))}
		if r.IntN(2) == 0 {
			db.Spec.Storage.StorageClassName = ptr.To([]string{"standard", "fast-ssd", "a.b-c"}[r.IntN(3)])
		}
	}
	if r.IntN(3) == 0 {
		db.Spec.CredentialsSecretName = []string{"own", "app.credentials", strings.Repeat("s", 253)}[r.IntN(3)]
	}
	if r.IntN(2) == 0 {
		db.Spec.DeletionPolicy = dbpilotv1alpha1.DeletionPolicyDelete
	}
	if r.IntN(2) == 0 {
		db.Spec.Backup = backup(r)
	}
	if engine == dbpilotv1alpha1.EnginePostgres && r.IntN(2) == 0 {
		db.Spec.Parameters = parameters(r)
	}
	if r.IntN(3) == 0 {
		db.Spec.Failover = &dbpilotv1alpha1.FailoverSpec{DelaySeconds: ptr.To(int32(r.IntN(3601)))}
	}
	if replicas > 1 && r.IntN(3) == 0 {
		count := int32(1)
		if engine == dbpilotv1alpha1.EnginePostgres {
			count = 1 + int32(r.IntN(int(replicas-1)))
		}
		db.Spec.Replication = &dbpilotv1alpha1.ReplicationSpec{Synchronous: &dbpilotv1alpha1.SynchronousReplication{Count: count}}
	}
	if r.IntN(2) == 0 {
		db.Spec.Autopilot = autopilot(r, replicas, tier, db.Spec.Replication)
	}
	db.Spec.Paused = r.IntN(8) == 0
	if r.IntN(2) == 0 {
		db.Spec.Scheduling = scheduling(r)
	}
	if r.IntN(2) == 0 {
		db.Spec.PodMetadata = podMetadata(r)
	}
	if r.IntN(3) == 0 {
		db.Spec.Expose = &dbpilotv1alpha1.ExposeSpec{ReadWrite: exposedService(r), ReadOnly: exposedService(r)}
	}
	if r.IntN(3) == 0 {
		db.Spec.Users = users(r)
	}
	return db
}

// userNames are names spec.users takes, the longest allowed among them.
var userNames = []string{"report", "etl_loader", "x", "a0", "dashboard_reader_of_the_shop_32c"}

// users draws one to all of userNames, each with a random access (or
// none, the default).
func users(r *rand.Rand) []dbpilotv1alpha1.DatabaseUser {
	accesses := []dbpilotv1alpha1.UserAccess{"", dbpilotv1alpha1.UserAccessReadOnly, dbpilotv1alpha1.UserAccessReadWrite}
	var users []dbpilotv1alpha1.DatabaseUser
	for _, i := range r.Perm(len(userNames))[:1+r.IntN(len(userNames))] {
		users = append(users, dbpilotv1alpha1.DatabaseUser{Name: userNames[i], Access: accesses[r.IntN(len(accesses))]})
	}
	return users
}

// sourceRanges are networks the CRD takes as load balancer source ranges.
var sourceRanges = []string{"0.0.0.0/0", "203.0.113.0/24", "10.1.2.3/32", "2001:db8::/32", "::/0"}

// exposedService draws a Service of spec.expose, or nil.
func exposedService(r *rand.Rand) *dbpilotv1alpha1.ExposedService {
	if r.IntN(3) == 0 {
		return nil
	}
	e := &dbpilotv1alpha1.ExposedService{Type: corev1.ServiceTypeNodePort}
	if r.IntN(2) == 0 {
		e.Type = corev1.ServiceTypeLoadBalancer
		for range r.IntN(3) {
			e.LoadBalancerSourceRanges = append(e.LoadBalancerSourceRanges, sourceRanges[r.IntN(len(sourceRanges))])
		}
	}
	if r.IntN(2) == 0 {
		e.Annotations = map[string]dbpilotv1alpha1.AnnotationValue{labelKeys[r.IntN(len(labelKeys))]: dbpilotv1alpha1.AnnotationValue(annotationValues[r.IntN(len(annotationValues))])}
	}
	return e
}

// annotationValues are values the CRD takes for a pod annotation.
var annotationValues = []string{"", "false", "a b: \"c\"\nd", "é€😀", strings.Repeat("a", 4096)}

// podMetadata draws spec.podMetadata.
func podMetadata(r *rand.Rand) *dbpilotv1alpha1.PodMetadata {
	m := &dbpilotv1alpha1.PodMetadata{Labels: map[string]dbpilotv1alpha1.LabelValue{}, Annotations: map[string]dbpilotv1alpha1.AnnotationValue{}}
	for range r.IntN(len(labelKeys)) {
		m.Labels[labelKeys[r.IntN(len(labelKeys))]] = dbpilotv1alpha1.LabelValue(labelValues[r.IntN(len(labelValues))])
	}
	for range r.IntN(len(labelKeys)) {
		m.Annotations[labelKeys[r.IntN(len(labelKeys))]] = dbpilotv1alpha1.AnnotationValue(annotationValues[r.IntN(len(annotationValues))])
	}
	return m
}

// Label keys and values, taint effects and topology keys the CRD takes in
// spec.scheduling. No PriorityClass is drawn: one must exist for a pod
// naming it to be admitted.
var (
	labelKeys    = []string{"pool", "node.example.com/disk", "a", strings.Repeat("k", 63), strings.Repeat("p", 200) + "/" + strings.Repeat("n", 63), "A_b.c-D"}
	labelValues  = []string{"", "databases", "1", strings.Repeat("v", 63), "a-b_c.D"}
	taintEffects = []corev1.TaintEffect{"", corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute}
	topologyKeys = []string{corev1.LabelHostname, corev1.LabelTopologyZone, "rack.example.com/name"}
)

// scheduling draws spec.scheduling.
func scheduling(r *rand.Rand) *dbpilotv1alpha1.SchedulingSpec {
	s := &dbpilotv1alpha1.SchedulingSpec{}
	if r.IntN(2) == 0 {
		s.NodeSelector = map[string]dbpilotv1alpha1.LabelValue{}
		for range 1 + r.IntN(len(labelKeys)) {
			s.NodeSelector[labelKeys[r.IntN(len(labelKeys))]] = dbpilotv1alpha1.LabelValue(labelValues[r.IntN(len(labelValues))])
		}
	}
	for range r.IntN(4) {
		t := dbpilotv1alpha1.Toleration{Operator: corev1.TolerationOpEqual, Effect: taintEffects[r.IntN(len(taintEffects))]}
		switch r.IntN(3) {
		case 0:
			t.Operator = corev1.TolerationOpExists
		case 1:
			t.Key, t.Operator = labelKeys[r.IntN(len(labelKeys))], corev1.TolerationOpExists
		default:
			t.Key, t.Value = labelKeys[r.IntN(len(labelKeys))], dbpilotv1alpha1.LabelValue(labelValues[r.IntN(len(labelValues))])
		}
		if t.Effect == corev1.TaintEffectNoExecute && r.IntN(2) == 0 {
			t.TolerationSeconds = ptr.To(int64(r.IntN(3600)))
		}
		s.Tolerations = append(s.Tolerations, t)
	}
	if r.IntN(2) == 0 {
		s.PodAntiAffinity = &dbpilotv1alpha1.PodAntiAffinitySpec{
			Type:        []dbpilotv1alpha1.PodAntiAffinityType{dbpilotv1alpha1.PodAntiAffinityPreferred, dbpilotv1alpha1.PodAntiAffinityRequired}[r.IntN(2)],
			TopologyKey: topologyKeys[r.IntN(len(topologyKeys))],
		}
	}
	return s
}

// ValidName turns any string into a valid Database name.
func ValidName(name string) string {
	var b strings.Builder
	for _, c := range strings.ToLower(name) {
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '-':
			b.WriteRune(c)
		default:
			b.WriteByte('-')
		}
	}
	valid := b.String()
	if valid == "" || valid[0] < 'a' || valid[0] > 'z' {
		valid = "d" + valid
	}
	if len(valid) > maxNameLength {
		valid = valid[:maxNameLength]
	}
	valid = strings.TrimRight(valid, "-")
	return valid
}

// version draws an empty version or one of the engine's default major, the
// only major a new Database may name.
func version(r *rand.Rand, engine dbpilotv1alpha1.Engine) string {
	major := map[dbpilotv1alpha1.Engine]string{
		dbpilotv1alpha1.EnginePostgres: "16", dbpilotv1alpha1.EngineMySQL: "8", dbpilotv1alpha1.EngineMariaDB: "11",
	}[engine]
	switch r.IntN(4) {
	case 0:
		return ""
	case 1:
		return major
	case 2:
		return fmt.Sprintf("%s.%d", major, r.IntN(10))
	default:
		return fmt.Sprintf("%s.%d.%d", major, r.IntN(10), r.IntN(40))
	}
}

func backup(r *rand.Rand) *dbpilotv1alpha1.BackupSpec {
	b := &dbpilotv1alpha1.BackupSpec{Schedule: schedules[r.IntN(len(schedules))]}
	if r.IntN(2) == 0 {
		b.Retention = int32(1 + r.IntN(1000))
	}
	if r.IntN(3) == 0 {
		b.MaxAge = fmt.Sprintf("%d%c", 1+r.IntN(99999), "hdw"[r.IntN(3)])
	}
	switch r.IntN(3) {
	case 0:
	case 1:
		b.Destination = &dbpilotv1alpha1.BackupDestination{S3: &dbpilotv1alpha1.S3Destination{
			Bucket: []string{"abc", "backups", strings.Repeat("b", 63)}[r.IntN(3)], Prefix: []string{"", "team/a", "x/../y"}[r.IntN(3)],
			Endpoint: []string{"", "https://s3.example.com", "http://10.0.0.1:9000"}[r.IntN(3)], Region: []string{"", "eu-west-1"}[r.IntN(2)],
			CredentialsSecretName: "s3",
		}}
	default:
		b.Destination = &dbpilotv1alpha1.BackupDestination{Volume: &dbpilotv1alpha1.VolumeDestination{ClaimName: "backups"}}
	}
	return b
}

// autopilot draws bounds that hold the spec's replicas and tier, with a
// minimum above the synchronous count.
func autopilot(r *rand.Rand, replicas int32, tier int, replication *dbpilotv1alpha1.ReplicationSpec) *dbpilotv1alpha1.AutopilotSpec {
	modes := []dbpilotv1alpha1.AutopilotMode{dbpilotv1alpha1.AutopilotOff, dbpilotv1alpha1.AutopilotRecommend, dbpilotv1alpha1.AutopilotAuto}
	a := &dbpilotv1alpha1.AutopilotSpec{Mode: modes[r.IntN(len(modes))]}
	floor := int32(1)
	if replication != nil && replication.Synchronous != nil {
		floor = replication.Synchronous.Count + 1
	}
	lo := floor + int32(r.IntN(int(replicas-floor)+1))
	hi := replicas + int32(r.IntN(int(17-replicas)))
	a.Replicas = &dbpilotv1alpha1.ReplicaBounds{Min: lo, Max: hi}
	a.Tiers = &dbpilotv1alpha1.TierBounds{Min: tiers[r.IntN(tier+1)], Max: tiers[tier+r.IntN(len(tiers)-tier)]}
	return a
}

// parameterNames are names the CRD takes in spec.parameters, an
// extension's among them; the value may be anything printable.
var (
	parameterNames  = []string{"work_mem", "log_line_prefix", "shared_preload_libraries", "auto_explain.log_min_duration", "search_path", "a", strings.Repeat("x", 63)}
	parameterValues = []string{"64MB", "", "it's", `C:\temp\`, "'; DROP TABLE x; --", "pg_stat_statements,auto_explain", "\"$user\", public", "é€😀", strings.Repeat("v", 1024)}
)

// parameters draws spec.parameters.
func parameters(r *rand.Rand) map[string]dbpilotv1alpha1.ParameterValue {
	params := map[string]dbpilotv1alpha1.ParameterValue{}
	for range 1 + r.IntN(len(parameterNames)) {
		params[parameterNames[r.IntN(len(parameterNames))]] = dbpilotv1alpha1.ParameterValue(parameterValues[r.IntN(len(parameterValues))])
	}
	return params
}
