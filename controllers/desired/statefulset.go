package desired

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"path"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
	"github.com/dbpilot/dbpilot/instance/layout"
	"github.com/dbpilot/dbpilot/internal/imagecatalog"
)

// Pod template annotations that record what the pod runs, so status can be
// rebuilt from the pods themselves.
const (
	AnnotationTier    = "dbpilot.io/tier"
	AnnotationVersion = "dbpilot.io/version"
	// AnnotationTemplateHash on the StatefulSet identifies the pod template
	// the operator last applied; a new hash starts a partitioned rollout.
	AnnotationTemplateHash = "dbpilot.io/template-hash"
	// AnnotationResizingInPlace on the StatefulSet is when the operator
	// began resizing its pods in place for a tier change (RFC 3339); absent
	// when no resize is under way.
	AnnotationResizingInPlace = "dbpilot.io/resizing-in-place"
	// AnnotationStartedTier on a pod resized in place is the tier its
	// engine started with, for which the settings only a restart applies
	// (PostgreSQL's shared_buffers and max_connections) are still sized.
	AnnotationStartedTier = "dbpilot.io/started-tier"
	// AnnotationResizeRefused on a pod is the tier an in-place resize of
	// it was refused (by its node, or the API server); the pod runs on at
	// its own tier, and the auto-pilot keeps below the refused one.
	AnnotationResizeRefused = "dbpilot.io/resize-refused"
	// AnnotationInstanceTLS on a pod says its instance program serves
	// HTTPS with the Database's server certificate (a pod from before
	// dbpilot issued certificates serves HTTP).
	AnnotationInstanceTLS = "dbpilot.io/instance-tls"
	// AnnotationParametersRestart on the pod template is the digest of
	// the spec.parameters the pods last restarted for
	// (ParametersDigest); absent until a setting of them waited for a
	// restart. Changing it rolls the pods, primary-safe.
	AnnotationParametersRestart = "dbpilot.io/parameters-restart"
)

// Restarts are the pod template's annotations whose only purpose is to
// restart the pods: changing either rolls them, primary-safe.
type Restarts struct {
	// Parameters is AnnotationParametersRestart; empty leaves it out.
	Parameters string
	// Requested is the Database's dbpilot.io/restart the pods last
	// restarted for (dbpilotv1alpha1.AnnotationRestart, under the same
	// key on the template); empty leaves it out.
	Requested string
}

// annotate adds the restarts set to a pod template's annotations.
func (r Restarts) annotate(annotations map[string]string) {
	if r.Parameters != "" {
		annotations[AnnotationParametersRestart] = r.Parameters
	}
	if r.Requested != "" {
		annotations[dbpilotv1alpha1.AnnotationRestart] = r.Requested
	}
}

// Container and volume names.
const (
	DatabaseContainerName = "database"
	// InstanceCopyContainerName is the init container that copies the
	// instance program from the operator's image.
	InstanceCopyContainerName = "instance-copy"
	configVolumeName          = "config"
	runVolumeName             = "run"
	tmpVolumeName             = "tmp"
	binVolumeName             = "dbpilot-bin"
	credentialsVolumeName     = "credentials"
	replicationVolumeName     = "replication"
	designationVolumeName     = "designation"
	metricsVolumeName         = "metrics"
	tlsVolumeName             = "tls"
)

// PostgresPGData is PGDATA: a subdirectory of the volume's mount, because
// initdb refuses a directory that holds lost+found.
const PostgresPGData = "/var/lib/postgresql/data/pgdata"

// terminationGracePeriodSeconds gives the engine time for a clean shutdown
// (a checkpoint on PostgreSQL) before the pod is killed.
const terminationGracePeriodSeconds = 120

// StatefulSetOptions are the parts of the StatefulSet that depend on the
// rollout in progress rather than on the Database alone.
type StatefulSetOptions struct {
	// Partition holds back pods with a lower ordinal from the new revision: 1
	// while the replicas roll, 0 once they are updated and ready, so the
	// primary (ordinal 0) restarts last.
	Partition int32
	// ClaimSize is the volume size in the claim template. Templates are
	// immutable once the StatefulSet exists, so the reconciler passes the
	// size it was created with and grows each claim directly; zero means
	// spec.storage.size.
	ClaimSize resource.Quantity
	// Replicas is the number of pods; zero means the Database's effective
	// replicas. The reconciler keeps pods a new template makes unneeded
	// until it has rolled out.
	Replicas int32
	// Stopped runs no pod at all (a hibernation), whatever Replicas says.
	Stopped bool
	// Images is the operator's image catalog.
	Images imagecatalog.Catalog
	// ResizingInPlaceSince, when set, records an in-place resize under way
	// (AnnotationResizingInPlace).
	ResizingInPlaceSince string
	// Restarts are the pod template's restart annotations.
	Restarts Restarts
}

// StatefulSet runs the Database's pods.
func StatefulSet(db *dbpilotv1alpha1.Database, opts StatefulSetOptions) *appsv1ac.StatefulSetApplyConfiguration {
	template := PodTemplate(db, opts.Images, opts.Restarts)
	replicas := db.EffectiveReplicas()
	if opts.Replicas > 0 {
		replicas = opts.Replicas
	}
	if opts.Stopped {
		replicas = 0
	}
	retention := appsv1.RetainPersistentVolumeClaimRetentionPolicyType
	if db.Spec.DeletionPolicy == dbpilotv1alpha1.DeletionPolicyDelete {
		retention = appsv1.DeletePersistentVolumeClaimRetentionPolicyType
	}
	annotations := map[string]string{AnnotationTemplateHash: TemplateHash(template)}
	if opts.ResizingInPlaceSince != "" {
		annotations[AnnotationResizingInPlace] = opts.ResizingInPlaceSince
	}
	return appsv1ac.StatefulSet(db.StatefulSetName(), db.Namespace).
		WithLabels(db.CommonLabels()).
		WithAnnotations(annotations).
		WithOwnerReferences(ownerReference(db)).
		WithSpec(appsv1ac.StatefulSetSpec().
			WithReplicas(replicas).
			WithServiceName(db.HeadlessServiceName()).
			WithSelector(metav1ac.LabelSelector().WithMatchLabels(db.SelectorLabels())).
			WithPodManagementPolicy(appsv1.OrderedReadyPodManagement).
			WithUpdateStrategy(appsv1ac.StatefulSetUpdateStrategy().
				WithType(appsv1.RollingUpdateStatefulSetStrategyType).
				WithRollingUpdate(appsv1ac.RollingUpdateStatefulSetStrategy().WithPartition(opts.Partition))).
			WithRevisionHistoryLimit(10).
			// Scaling down never deletes a volume; deleting the Database
			// deletes them only with deletionPolicy Delete.
			WithPersistentVolumeClaimRetentionPolicy(appsv1ac.StatefulSetPersistentVolumeClaimRetentionPolicy().
				WithWhenScaled(appsv1.RetainPersistentVolumeClaimRetentionPolicyType).
				WithWhenDeleted(retention)).
			WithTemplate(template).
			WithVolumeClaimTemplates(volumeClaimTemplate(db, opts.ClaimSize)))
}

// TemplateHash identifies a rendered pod template.
func TemplateHash(template *corev1ac.PodTemplateSpecApplyConfiguration) string {
	data, err := json.Marshal(template)
	if err != nil {
		// Apply configurations are plain structs; marshalling cannot fail.
		panic(err)
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:8])
}

// PodTemplate is the pod of every member of the Database: an init container
// copies the instance program from the operator's image, and the database
// container runs it as its entrypoint with the engine image's binaries.
// restarts are its restart annotations (the zero value: none).
func PodTemplate(db *dbpilotv1alpha1.Database, images imagecatalog.Catalog, restarts Restarts) *corev1ac.PodTemplateSpecApplyConfiguration {
	profile, _ := db.Spec.Engine.Profile()
	annotations := map[string]string{
		dbpilotv1alpha1.AnnotationConfigChecksum: ConfigChecksum(db),
		AnnotationTier:                           string(db.EffectiveTier()),
		AnnotationVersion:                        db.EngineVersion(),
		AnnotationInstanceTLS:                    "true",
	}
	restarts.annotate(annotations)
	return corev1ac.PodTemplateSpec().
		WithLabels(podLabels(db)).
		WithAnnotations(podAnnotations(db, annotations)).
		WithSpec(withScheduling(corev1ac.PodSpec().
			WithAutomountServiceAccountToken(false).
			WithEnableServiceLinks(false).
			WithTerminationGracePeriodSeconds(terminationGracePeriodSeconds).
			WithSecurityContext(corev1ac.PodSecurityContext().
				WithRunAsNonRoot(true).
				WithRunAsUser(profile.UserID).
				WithRunAsGroup(profile.UserID).
				WithFSGroup(profile.UserID).
				WithFSGroupChangePolicy(corev1.FSGroupChangeOnRootMismatch).
				WithSeccompProfile(corev1ac.SeccompProfile().WithType(corev1.SeccompProfileTypeRuntimeDefault))).
			WithTopologySpreadConstraints(corev1ac.TopologySpreadConstraint().
				WithMaxSkew(1).
				WithTopologyKey(corev1.LabelTopologyZone).
				WithWhenUnsatisfiable(corev1.ScheduleAnyway).
				WithLabelSelector(metav1ac.LabelSelector().WithMatchLabels(db.SelectorLabels()))).
			WithInitContainers(instanceCopyContainer(images)).
			WithContainers(databaseContainer(db, images)).
			WithVolumes(podVolumes(db)...), db))
}

// instanceCopyResources are the copy's requests and limits: equal, so the
// pod stays in the Guaranteed QoS class; an init container's resources do
// not add to the pod's. A new map on every call: the client decodes the
// API server's answer into what it applied, and reconcile workers apply
// at once.
func instanceCopyResources() corev1.ResourceList {
	return corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("100m"),
		corev1.ResourceMemory: resource.MustParse("64Mi"),
	}
}

func instanceCopyContainer(images imagecatalog.Catalog) *corev1ac.ContainerApplyConfiguration {
	return corev1ac.Container().
		WithName(InstanceCopyContainerName).
		WithImage(images.Instance).
		WithImagePullPolicy(corev1.PullIfNotPresent).
		WithCommand(layout.ProgramInOperatorImage, layout.CommandCopy, layout.InstanceBinary).
		WithResources(corev1ac.ResourceRequirements().WithRequests(instanceCopyResources()).WithLimits(instanceCopyResources())).
		WithSecurityContext(restrictedContainer()).
		WithVolumeMounts(corev1ac.VolumeMount().WithName(binVolumeName).WithMountPath(layout.BinDir))
}

// restrictedContainer is what PodSecurity "restricted" asks of a container,
// and a read-only root filesystem.
func restrictedContainer() *corev1ac.SecurityContextApplyConfiguration {
	return corev1ac.SecurityContext().
		WithAllowPrivilegeEscalation(false).
		WithReadOnlyRootFilesystem(true).
		WithRunAsNonRoot(true).
		WithCapabilities(corev1ac.Capabilities().WithDrop("ALL"))
}

// DatabaseResources are the database container's requests, and its limits:
// equal, so the pod is in the Guaranteed QoS class. Each call returns a new
// map.
func DatabaseResources(db *dbpilotv1alpha1.Database) corev1.ResourceList {
	size, _ := db.EffectiveTier().Size()
	return corev1.ResourceList{corev1.ResourceCPU: size.CPU, corev1.ResourceMemory: size.Memory}
}

func databaseContainer(db *dbpilotv1alpha1.Database, images imagecatalog.Catalog) *corev1ac.ContainerApplyConfiguration {
	profile, _ := db.Spec.Engine.Profile()
	resources := func() corev1.ResourceList { return DatabaseResources(db) }
	_, backupMounts := backupVolumes(db)
	container := corev1ac.Container().
		WithName(DatabaseContainerName).
		WithImage(images.EngineImage(string(db.Spec.Engine), db.EngineVersion())).
		WithImagePullPolicy(corev1.PullIfNotPresent).
		WithCommand(layout.InstanceBinary).
		WithArgs(instanceArgs(db)...).
		WithEnv(backupEnv(db)...).
		WithPorts(
			corev1ac.ContainerPort().WithName(portName).WithContainerPort(profile.Port).WithProtocol(corev1.ProtocolTCP),
			corev1ac.ContainerPort().WithName(layout.ProbePortName).WithContainerPort(layout.ProbePort).WithProtocol(corev1.ProtocolTCP),
			corev1ac.ContainerPort().WithName(layout.MetricsPortName).WithContainerPort(layout.MetricsPort).WithProtocol(corev1.ProtocolTCP)).
		WithResources(corev1ac.ResourceRequirements().WithRequests(resources()).WithLimits(resources())).
		WithSecurityContext(restrictedContainer()).
		// The instance program answers the probes: alive while it runs (it
		// exits with the engine), ready while the engine accepts sessions
		// with the credentials applied. Bootstrap and crash recovery may
		// take long; the startup probe allows an hour.
		WithStartupProbe(httpProbe(layout.LivenessPath, 2, 1800)).
		WithReadinessProbe(httpProbe(layout.ReadinessPath, 5, 3)).
		WithLivenessProbe(httpProbe(layout.LivenessPath, 10, 6)).
		WithVolumeMounts(
			corev1ac.VolumeMount().WithName(db.VolumeClaimTemplateName()).WithMountPath(profile.DataDir),
			corev1ac.VolumeMount().WithName(configVolumeName).WithMountPath(profile.ConfigDir).WithReadOnly(true),
			corev1ac.VolumeMount().WithName(runVolumeName).WithMountPath(runDir(db)),
			corev1ac.VolumeMount().WithName(tmpVolumeName).WithMountPath("/tmp"),
			corev1ac.VolumeMount().WithName(binVolumeName).WithMountPath(layout.BinDir).WithReadOnly(true),
			corev1ac.VolumeMount().WithName(credentialsVolumeName).WithMountPath(layout.CredentialsDir).WithReadOnly(true),
			corev1ac.VolumeMount().WithName(replicationVolumeName).WithMountPath(layout.ReplicationDir).WithReadOnly(true),
			corev1ac.VolumeMount().WithName(designationVolumeName).WithMountPath(layout.DesignationDir).WithReadOnly(true),
			corev1ac.VolumeMount().WithName(metricsVolumeName).WithMountPath(layout.MetricsDir).WithReadOnly(true),
			corev1ac.VolumeMount().WithName(tlsVolumeName).WithMountPath(layout.TLSDir).WithReadOnly(true),
		).
		WithVolumeMounts(backupMounts...)
	return container
}

// instanceArgs tell the instance program which engine to run and where its
// data, configuration and socket are.
func instanceArgs(db *dbpilotv1alpha1.Database) []string {
	profile, _ := db.Spec.Engine.Profile()
	if db.Spec.Engine == dbpilotv1alpha1.EnginePostgres {
		// The designated primary (at first the pod of ordinal 0)
		// bootstraps an empty volume; the others clone the primary
		// through the read-write Service and stream from it, each
		// through its own slot.
		return append([]string{layout.CommandRun, "--engine=postgres",
			"--data-dir=" + PostgresPGData,
			"--config-file=" + path.Join(profile.ConfigDir, PostgresConfigFile),
			"--socket=" + runDir(db),
			"--clone-from=" + db.ServiceHost(db.ReadWriteServiceName()),
			"--replication-password-file=" + path.Join(layout.ReplicationDir, layout.KeyReplicationPassword),
			"--monitoring-password-file=" + path.Join(layout.ReplicationDir, layout.KeyMonitoringPassword),
			"--designation-dir=" + layout.DesignationDir,
			"--tls-dir=" + layout.TLSDir,
			metricsAddressArg, metricsTokenArg,
		}, requireTLSArgs(db)...)
	}
	// MariaDB replicas clone the primary from a backup its instance
	// program streams, then replicate by GTID. (MySQL replicas do not
	// clone yet.)
	args := []string{layout.CommandRun, "--engine=" + string(db.Spec.Engine),
		"--data-dir=" + profile.DataDir,
		"--socket=" + path.Join(runDir(db), "mysqld.sock"),
		"--clone-from=" + db.ServiceHost(db.ReadWriteServiceName()),
		"--replication-password-file=" + path.Join(layout.ReplicationDir, layout.KeyReplicationPassword),
		"--monitoring-password-file=" + path.Join(layout.ReplicationDir, layout.KeyMonitoringPassword),
		"--designation-dir=" + layout.DesignationDir,
		"--tls-dir=" + layout.TLSDir,
		metricsAddressArg, metricsTokenArg,
	}
	args = append(args, requireTLSArgs(db)...)
	if db.SynchronousReplicas() > 0 {
		args = append(args, "--semi-sync")
	}
	return args
}

// requireTLSArgs have the engine refuse network connections without TLS
// when spec.tls.required says so, and the application user's logins
// without its client certificate when spec.tls.clientCertificateRequired
// does.
func requireTLSArgs(db *dbpilotv1alpha1.Database) []string {
	var args []string
	if db.RequiresTLS() {
		args = append(args, "--require-tls")
	}
	if db.RequiresClientCertificate() {
		args = append(args, "--require-client-certificate")
	}
	return args
}

// The engine metrics are served on their own port to the metrics Secret's
// token.
var (
	metricsAddressArg = "--metrics-address=:" + strconv.Itoa(layout.MetricsPort)
	metricsTokenArg   = "--metrics-token-file=" + path.Join(layout.MetricsDir, layout.KeyMetricsToken)
)

// runDir is where the engine keeps its socket and pid file; an emptyDir,
// since the root filesystem is read-only.
func runDir(db *dbpilotv1alpha1.Database) string {
	if db.Spec.Engine == dbpilotv1alpha1.EnginePostgres {
		return "/var/run/postgresql"
	}
	return "/var/run/mysqld"
}

// httpProbe asks the instance program over HTTPS: it serves the server
// certificate, which the kubelet does not verify.
func httpProbe(path string, periodSeconds, failureThreshold int32) *corev1ac.ProbeApplyConfiguration {
	return corev1ac.Probe().
		WithHTTPGet(corev1ac.HTTPGetAction().WithPath(path).WithPort(intstr.FromString(layout.ProbePortName)).WithScheme(corev1.URISchemeHTTPS)).
		WithPeriodSeconds(periodSeconds).
		WithTimeoutSeconds(5).
		WithFailureThreshold(failureThreshold)
}

func podVolumes(db *dbpilotv1alpha1.Database) []*corev1ac.VolumeApplyConfiguration {
	backup, _ := backupVolumes(db)
	return append([]*corev1ac.VolumeApplyConfiguration{
		corev1ac.Volume().WithName(configVolumeName).WithConfigMap(corev1ac.ConfigMapVolumeSource().WithName(db.ConfigMapName())),
		corev1ac.Volume().WithName(runVolumeName).WithEmptyDir(corev1ac.EmptyDirVolumeSource()),
		corev1ac.Volume().WithName(tmpVolumeName).WithEmptyDir(corev1ac.EmptyDirVolumeSource()),
		corev1ac.Volume().WithName(binVolumeName).WithEmptyDir(corev1ac.EmptyDirVolumeSource().
			WithSizeLimit(resource.MustParse("64Mi"))),
		// Files of mode 0440: readable by the engine's user through the
		// pod's fsGroup, and updated in place when the Secret changes.
		corev1ac.Volume().WithName(credentialsVolumeName).WithSecret(corev1ac.SecretVolumeSource().
			WithSecretName(db.CredentialsSecretName()).
			WithDefaultMode(0o440)),
		corev1ac.Volume().WithName(replicationVolumeName).WithSecret(corev1ac.SecretVolumeSource().
			WithSecretName(db.ReplicationSecretName()).
			WithDefaultMode(0o440)),
		corev1ac.Volume().WithName(metricsVolumeName).WithSecret(corev1ac.SecretVolumeSource().
			WithSecretName(dbpilotv1alpha1.MetricsSecretName).
			WithDefaultMode(0o440)),
		// The server certificate, renewed in place: root's files of mode
		// 0440, which PostgreSQL accepts for a private key (one it owns
		// must be 0600).
		corev1ac.Volume().WithName(tlsVolumeName).WithSecret(corev1ac.SecretVolumeSource().
			WithSecretName(db.ServerCertificateSecretName()).
			WithDefaultMode(0o440)),
		// Which instance is the primary: read when the instance starts,
		// and by a running primary, which steps down when it names another.
		corev1ac.Volume().WithName(designationVolumeName).WithConfigMap(corev1ac.ConfigMapVolumeSource().
			WithName(db.DesignationConfigMapName())),
	}, backup...)
}

func volumeClaimTemplate(db *dbpilotv1alpha1.Database, size resource.Quantity) *corev1ac.PersistentVolumeClaimApplyConfiguration {
	if size.IsZero() {
		size = db.SpecStorageSize()
	}
	spec := corev1ac.PersistentVolumeClaimSpec().
		WithAccessModes(corev1.ReadWriteOnce).
		WithVolumeMode(corev1.PersistentVolumeFilesystem).
		WithResources(corev1ac.VolumeResourceRequirements().
			WithRequests(corev1.ResourceList{corev1.ResourceStorage: size}))
	if class := db.StorageClassName(); class != nil {
		spec.WithStorageClassName(*class)
	}
	// No namespace, kind or apiVersion: a claim template carries none. The
	// template list is atomic, so the fields the API server would default
	// (volumeMode above, status here) are spelled out; otherwise they would
	// differ from what is applied and every pass would write.
	template := &corev1ac.PersistentVolumeClaimApplyConfiguration{}
	return template.
		WithName(db.VolumeClaimTemplateName()).
		WithLabels(db.CommonLabels()).
		WithSpec(spec).
		WithStatus(corev1ac.PersistentVolumeClaimStatus().WithPhase(corev1.ClaimPending))
}
