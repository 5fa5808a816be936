package v1alpha1

import (
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Engine names a database engine.
// +kubebuilder:validation:Enum=postgres;mysql;mariadb
type Engine string

// The engines dbpilot runs.
const (
	EnginePostgres Engine = "postgres"
	EngineMySQL    Engine = "mysql"
	EngineMariaDB  Engine = "mariadb"
)

// Tier names a resource class: CPU and memory for each pod, and the engine
// tuning that goes with them (Tier.Size; the README's tier table).
// +kubebuilder:validation:Enum=small;medium;large;xlarge;"2xlarge"
type Tier string

// The tiers, smallest first.
const (
	TierSmall   Tier = "small"
	TierMedium  Tier = "medium"
	TierLarge   Tier = "large"
	TierXLarge  Tier = "xlarge"
	Tier2XLarge Tier = "2xlarge"
)

// ParameterValue is the value of an engine setting, as postgresql.conf
// would give it, without quotes.
// +kubebuilder:validation:MaxLength=1024
type ParameterValue string

// DeletionPolicy says what happens to a Database's volumes when it is deleted.
// +kubebuilder:validation:Enum=Retain;Delete
type DeletionPolicy string

// The deletion policies.
const (
	// DeletionPolicyRetain keeps the PersistentVolumeClaims, labelled with the
	// Database they came from, so the data can be found and reused.
	DeletionPolicyRetain DeletionPolicy = "Retain"
	// DeletionPolicyDelete removes the PersistentVolumeClaims with the Database.
	DeletionPolicyDelete DeletionPolicy = "Delete"
)

// AutopilotMode says how far the auto-pilot may go.
// +kubebuilder:validation:Enum=Off;Recommend;Auto
type AutopilotMode string

// The auto-pilot modes.
const (
	// AutopilotOff disables the auto-pilot and clears its status.
	AutopilotOff AutopilotMode = "Off"
	// AutopilotRecommend records decisions in status without acting on them.
	AutopilotRecommend AutopilotMode = "Recommend"
	// AutopilotAuto acts on decisions within the bounds of spec.autopilot.
	AutopilotAuto AutopilotMode = "Auto"
)

// Database is a PostgreSQL, MySQL or MariaDB database run by dbpilot: one
// primary and zero or more replicas, sized by a tier, optionally scaled by the
// auto-pilot within the bounds its owner sets.
// +operator-sdk:csv:customresourcedefinitions:displayName="Database",resources={{StatefulSet,v1,""},{Service,v1,""},{Secret,v1,""},{ConfigMap,v1,""},{PodDisruptionBudget,v1,""},{PersistentVolumeClaim,v1,""},{Pod,v1,""}}
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.replicas,selectorpath=.status.selector
// +kubebuilder:resource:shortName=db,categories=all
// +kubebuilder:printcolumn:name="Engine",type=string,JSONPath=`.spec.engine`
// +kubebuilder:printcolumn:name="Version",type=string,JSONPath=`.status.version`
// +kubebuilder:printcolumn:name="Tier",type=string,JSONPath=`.status.tier`
// +kubebuilder:printcolumn:name="Primary",type=string,JSONPath=`.status.currentPrimary`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.ready`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Autopilot",type=string,JSONPath=`.status.autopilot.mode`,priority=1
// +kubebuilder:printcolumn:name="Last-Action",type=string,JSONPath=`.status.autopilot.lastDecision.action`,priority=1
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.autopilot.lastDecision.reason`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 40",message="metadata.name must be at most 40 characters: it prefixes the names of the Database's Services, StatefulSet and Pods"
// +kubebuilder:validation:XValidation:rule="self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",message="metadata.name must start with a letter and contain only lowercase letters, digits and '-': it names the Database's Services"
// +kubebuilder:validation:XValidation:rule="!has(self.spec.tls) || !has(self.spec.tls.serverCertificateSecretName) || !(self.spec.tls.serverCertificateSecretName in [self.metadata.name + '-tls', self.metadata.name + '-ca', self.metadata.name + '-client-ca', self.metadata.name + '-app-tls'])",message="spec.tls.serverCertificateSecretName must not name <metadata.name>-tls, -ca, -client-ca or -app-tls: dbpilot writes those Secrets"
type Database struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired state of the Database, written by its owner.
	// +required
	Spec DatabaseSpec `json:"spec"`

	// status is the observed state of the Database, written by dbpilot.
	// +optional
	Status DatabaseStatus `json:"status,omitempty"`
}

// DatabaseList is a list of Databases.
// +kubebuilder:object:root=true
type DatabaseList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Database `json:"items"`
}

// DatabaseSpec is the desired state of a Database.
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.version) || has(self.version)",message="spec.version cannot be removed once set"
// +kubebuilder:validation:XValidation:rule="!has(self.version) || !isSemver(self.version, true) || (self.engine == 'postgres' ? semver(self.version, true).major() >= 13 && semver(self.version, true).major() <= 17 : self.engine == 'mysql' ? semver(self.version, true).major() == 8 : semver(self.version, true).major() in [10, 11])",message="spec.version is not a supported version of spec.engine (postgres 13-17, mysql 8.x, mariadb 10.x and 11.x)"
// +kubebuilder:validation:XValidation:rule="!has(self.version) || !has(oldSelf.version) || !isSemver(self.version, true) || !isSemver(oldSelf.version, true) || semver(self.version, true).compareTo(semver(oldSelf.version, true)) >= 0",message="spec.version cannot be downgraded: restore a backup into a new Database to go back to an older version"
// +kubebuilder:validation:XValidation:rule="!has(self.version) || !has(oldSelf.version) || !isSemver(self.version, true) || !isSemver(oldSelf.version, true) || semver(self.version, true).major() == semver(oldSelf.version, true).major()",message="spec.version: major version upgrades are not done in place; restore a backup into a new Database running the new major version"
// +kubebuilder:validation:XValidation:rule="has(oldSelf.version) || !has(self.version) || !isSemver(self.version, true) || semver(self.version, true).major() == (self.engine == 'postgres' ? 16 : self.engine == 'mysql' ? 8 : 11)",message="spec.version: setting a version of another major than the engine's default (postgres 16, mysql 8, mariadb 11) is a major upgrade, which is not done in place"
// +kubebuilder:validation:XValidation:rule="has(oldSelf.credentialsSecretName) == has(self.credentialsSecretName) && (!has(self.credentialsSecretName) || self.credentialsSecretName == oldSelf.credentialsSecretName)",message="spec.credentialsSecretName is immutable: the running database keeps the credentials it was created with"
// +kubebuilder:validation:XValidation:rule="!has(self.autopilot) || self.autopilot.mode == 'Off' || !has(self.autopilot.replicas) || (self.replicas >= self.autopilot.replicas.min && self.replicas <= self.autopilot.replicas.max)",message="spec.replicas must lie within spec.autopilot.replicas.min and max while the auto-pilot is on"
// +kubebuilder:validation:XValidation:rule="!has(self.autopilot) || self.autopilot.mode == 'Off' || !has(self.autopilot.tiers) || ({'small': 0, 'medium': 1, 'large': 2, 'xlarge': 3, '2xlarge': 4}[self.tier] >= {'small': 0, 'medium': 1, 'large': 2, 'xlarge': 3, '2xlarge': 4}[self.autopilot.tiers.min] && {'small': 0, 'medium': 1, 'large': 2, 'xlarge': 3, '2xlarge': 4}[self.tier] <= {'small': 0, 'medium': 1, 'large': 2, 'xlarge': 3, '2xlarge': 4}[self.autopilot.tiers.max])",message="spec.tier must lie within spec.autopilot.tiers.min and max while the auto-pilot is on"
// +kubebuilder:validation:XValidation:rule="!has(self.autopilot) || !has(self.autopilot.storage) || !has(self.autopilot.storage.maxSize) || !has(self.storage) || !has(self.storage.size) || quantity(string(self.autopilot.storage.maxSize)).compareTo(quantity(string(self.storage.size))) >= 0",message="spec.autopilot.storage.maxSize must not be smaller than spec.storage.size"
// +kubebuilder:validation:XValidation:rule="!has(self.replication) || !has(self.replication.synchronous) || self.replication.synchronous.count < self.replicas",message="spec.replication.synchronous.count must be less than spec.replicas: commits wait for that many replicas"
// +kubebuilder:validation:XValidation:rule="!has(self.replication) || !has(self.replication.synchronous) || !has(self.autopilot) || self.autopilot.mode == 'Off' || !has(self.autopilot.replicas) || self.replication.synchronous.count < self.autopilot.replicas.min",message="spec.replication.synchronous.count must be less than spec.autopilot.replicas.min: commits wait for that many replicas"
// +kubebuilder:validation:XValidation:rule="!has(self.replication) || !has(self.replication.synchronous) || self.engine == 'postgres' || self.replication.synchronous.count == 1",message="spec.replication.synchronous.count must be 1 for mariadb and mysql: semi-synchronous replication waits for one replica"
// +kubebuilder:validation:XValidation:rule="has(oldSelf.bootstrap) == has(self.bootstrap)",message="spec.bootstrap is immutable: it only says how the Database was created"
// +kubebuilder:validation:XValidation:rule="!has(self.users) || size(self.users) == 0 || self.engine != 'postgres' || !has(self.version) || !isSemver(self.version, true) || semver(self.version, true).major() >= 15",message="spec.users: PostgreSQL 15 or later (13 and 14 let every user create tables in the public schema, and 13 has no pg_read_all_data)"
// +kubebuilder:validation:XValidation:rule="!has(self.parameters) || size(self.parameters) == 0 || self.engine != 'mysql'",message="spec.parameters: MySQL takes no parameters yet (PostgreSQL and MariaDB do)"
// +kubebuilder:validation:XValidation:rule="!has(self.parameters) || self.engine != 'mariadb' || self.parameters.all(k, !(k in ['bind_address', 'datadir', 'socket', 'server_id', 'log_bin', 'log_bin_basename', 'log_bin_index', 'log_basename', 'log_slave_updates', 'log_replica_updates', 'read_only', 'skip_name_resolve', 'require_secure_transport', 'plugin_load', 'plugin_load_add', 'plugin_dir', 'pid_file', 'user', 'basedir', 'log_error', 'init_file', 'skip_networking', 'skip_grant_tables', 'relay_log', 'relay_log_index', 'innodb_data_home_dir', 'innodb_log_group_home_dir', 'tmpdir'] || k.startsWith('gtid') || k.startsWith('rpl_semi_sync') || k.startsWith('wsrep')))",message="spec.parameters: dbpilot sets MariaDB's listening, files, binary log and replication (server_id, read_only, gtid*, rpl_semi_sync*), TLS (ssl*) and start-up (init_file, skip_grant_tables, plugin_load*) itself"
type DatabaseSpec struct {
	// engine is the database engine: postgres, mysql or mariadb. It cannot be
	// changed after creation.
	// +required
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.engine is immutable: create a new Database and migrate the data"
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Engine",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:select:postgres","urn:alm:descriptor:com.tectonic.ui:select:mysql","urn:alm:descriptor:com.tectonic.ui:select:mariadb"}
	Engine Engine `json:"engine"`

	// version is the engine version, as "MAJOR", "MAJOR.MINOR" or
	// "MAJOR.MINOR.PATCH" (for example "16", "16.4", "8.4", "11.4"). When unset,
	// the engine's default version is used (postgres 16, mysql 8.4, mariadb
	// 11.4). Raising the minor version rolls the pods, replicas first; a major
	// version change or a downgrade is rejected.
	// +optional
	// +kubebuilder:validation:Pattern=`^[0-9]+(\.[0-9]+){0,2}$`
	// +kubebuilder:validation:MaxLength=16
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Version",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:text"}
	Version string `json:"version,omitempty"`

	// replicas is the number of pods: one primary plus replicas-1 replicas
	// that clone it and replicate (MySQL replicas clone with the CLONE
	// plugin, a path never yet run against a real MySQL server: see the
	// README). When the auto-pilot is in Auto
	// mode it decides the number within spec.autopilot.replicas, and this
	// value is the fallback.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=16
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Replicas",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:podCount"}
	Replicas *int32 `json:"replicas,omitempty"`

	// tier is the resource class of every pod: small, medium, large, xlarge or
	// 2xlarge. It sets CPU and memory requests and limits and tunes the engine
	// (buffers, caches, max connections) to match. Where the API server
	// serves pods/resize and the kubelets report container resources, a
	// change resizes the running pods in place, none restarting: MariaDB
	// and MySQL both ways, their buffer pool and max connections set
	// online; PostgreSQL one tier above the one its server started with,
	// reloading its configuration, with shared_buffers and max_connections
	// waiting for the pod's next restart (status.instances[].pendingRestart).
	// Otherwise (a smaller PostgreSQL tier, a PostgreSQL tier two or more
	// steps above the one its server started with, or a resize the node
	// cannot take or does not finish within 2 minutes) it rolls the pods,
	// replicas first, the primary after a switchover.
	// +optional
	// +kubebuilder:default=small
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Tier",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:select:small","urn:alm:descriptor:com.tectonic.ui:select:medium","urn:alm:descriptor:com.tectonic.ui:select:large","urn:alm:descriptor:com.tectonic.ui:select:xlarge","urn:alm:descriptor:com.tectonic.ui:select:2xlarge"}
	Tier Tier `json:"tier,omitempty"`

	// storage is the volume of each pod: 10Gi of the cluster's default
	// StorageClass when unset. It can grow but never shrink.
	// +optional
	// +kubebuilder:default={size: "10Gi"}
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Storage",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:fieldGroup:storage"}
	Storage *StorageSpec `json:"storage,omitempty"`

	// credentialsSecretName names an existing Secret in the Database's namespace
	// holding the keys username, password and superuser-password. When unset,
	// dbpilot generates a Secret named <name>-credentials once and never
	// regenerates it. It cannot be changed after creation.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Credentials Secret",xDescriptors={"urn:alm:descriptor:io.kubernetes:Secret"}
	CredentialsSecretName string `json:"credentialsSecretName,omitempty"`

	// users are users dbpilot keeps in the engine besides the application
	// user (for a report, a dashboard, another service), each with a
	// password generated once into the Secret <name>.user.<user> (keys
	// username and password; editing its password rotates it in the
	// running engine). A user added is created on the primary within
	// seconds of the Secret reaching the pods, without a restart; a user
	// removed may no longer log in and its sessions end, while what it
	// owns and its Secret are kept (adding it again lets it back in).
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=32
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Users"
	Users []DatabaseUser `json:"users,omitempty"`

	// backup schedules backups of the Database.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Backup",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:fieldGroup:backup"}
	Backup *BackupSpec `json:"backup,omitempty"`

	// bootstrap says where a new Database's data comes from: empty when
	// unset, or restored from a backup. It cannot be changed after creation.
	// +optional
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.bootstrap is immutable: it only says how the Database was created"
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Bootstrap",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:fieldGroup:bootstrap"}
	Bootstrap *BootstrapSpec `json:"bootstrap,omitempty"`

	// autopilot lets dbpilot move replicas, tier and storage within bounds from
	// Prometheus metrics.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Auto-pilot",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:fieldGroup:autopilot"}
	Autopilot *AutopilotSpec `json:"autopilot,omitempty"`

	// replication tunes how the primary's changes reach the replicas.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Replication",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:fieldGroup:replication"}
	Replication *ReplicationSpec `json:"replication,omitempty"`

	// failover says when a replica replaces a primary that stopped serving.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Failover",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:fieldGroup:failover"}
	Failover *FailoverSpec `json:"failover,omitempty"`

	// tls is how clients reach the Database over TLS. Its engines always
	// serve TLS: by default with a certificate of the Database's own
	// authority (the Secret <name>-ca; clients verify with its ca.crt),
	// or with the user's own (serverCertificateSecretName); by default
	// clients may also connect without TLS.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="TLS",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:fieldGroup:tls"}
	TLS *TLSSpec `json:"tls,omitempty"`

	// parameters are engine settings by name, as SHOW (PostgreSQL) or
	// SHOW VARIABLES (MariaDB) name them (work_mem: 64MB,
	// shared_preload_libraries: pg_stat_statements; max_allowed_packet:
	// 64M), set over those dbpilot derives from the tier. Each pod's
	// instance program has the server binary read them first, as a start
	// would: an unknown name, an invalid value or a preload library that
	// is not installed changes nothing, not even at the next start, and
	// is reported in the Degraded condition (ParametersRefused). The
	// running servers then take them without a restart (PostgreSQL:
	// postgresql.auto.conf and a reload, taken back if new sessions then
	// fail; MariaDB: SET GLOBAL, and the server's options at its next
	// start). A setting only a restart applies rolls the pods, replicas
	// first, the primary after a switchover. Removing a setting resets
	// it. Settings dbpilot manages itself (listening, files, replication,
	// archiving, recovery, TLS, synchronous commit) are rejected. MySQL
	// takes none yet.
	// +optional
	// +kubebuilder:validation:MaxProperties=64
	// +kubebuilder:validation:XValidation:rule="self.all(k, k.size() <= 63 && k.matches('^[a-z][a-z0-9_]*([.][a-z][a-z0-9_]*)?$'))",message="spec.parameters: a name is a setting's as the engine shows it (SHOW, SHOW VARIABLES): lowercase letters, digits and _, with one . for a PostgreSQL extension's setting, at most 63 characters"
	// +kubebuilder:validation:XValidation:rule="self.all(k, !(k in ['listen_addresses', 'port', 'data_directory', 'hba_file', 'ident_file', 'config_file', 'external_pid_file', 'unix_socket_directories', 'unix_socket_group', 'unix_socket_permissions', 'wal_level', 'max_wal_senders', 'max_replication_slots', 'hot_standby', 'full_page_writes', 'synchronous_standby_names', 'synchronous_commit', 'password_encryption', 'log_destination', 'logging_collector', 'archive_mode', 'archive_command', 'archive_library', 'archive_timeout', 'restore_command', 'archive_cleanup_command', 'recovery_end_command', 'primary_conninfo', 'primary_slot_name', 'promote_trigger_file', 'max_slot_wal_keep_size', 'wal_keep_size', 'include', 'include_if_exists', 'include_dir', 'recovery_min_apply_delay', 'db_user_namespace', 'huge_pages'] || k.startsWith('ssl') || k.startsWith('recovery_target')))",message="spec.parameters: dbpilot sets listening, files, replication, archiving, recovery, TLS (ssl*), synchronous commit, huge pages and db_user_namespace itself"
	// +kubebuilder:validation:XValidation:rule="self.all(k, !self[k].matches('[\\x00-\\x1f\\x7f]'))",message="spec.parameters: a value must not hold a control character (a newline, a tab)"
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Parameters"
	Parameters map[string]ParameterValue `json:"parameters,omitempty"`

	// scheduling says which nodes the pods may run on (nodeSelector,
	// tolerations), how they keep apart (podAntiAffinity) and their
	// PriorityClass. A change rolls the pods, replicas first.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Scheduling",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:fieldGroup:scheduling"}
	Scheduling *SchedulingSpec `json:"scheduling,omitempty"`

	// podMetadata are labels and annotations of the user's for the pods
	// (a change rolls them, replicas first).
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Pod Metadata",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:fieldGroup:podMetadata"}
	PodMetadata *PodMetadata `json:"podMetadata,omitempty"`

	// expose publishes the primary, the replicas or both outside the
	// cluster through Services of their own (LoadBalancer or NodePort).
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Expose",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:fieldGroup:expose"}
	Expose *ExposeSpec `json:"expose,omitempty"`

	// deletionPolicy says what happens to the volumes when the Database is
	// deleted: Retain (the default) keeps the PersistentVolumeClaims and labels
	// them with the Database's name; Delete removes them. Scaling down never
	// deletes a volume.
	// +optional
	// +kubebuilder:default=Retain
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Deletion Policy",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:select:Retain","urn:alm:descriptor:com.tectonic.ui:select:Delete"}
	DeletionPolicy DeletionPolicy `json:"deletionPolicy,omitempty"`

	// hibernate stops every pod of the Database and keeps its volumes,
	// its Services, its Secrets and its backups: nothing runs and nothing
	// is lost. The primary first moves to the pod of ordinal 0 (a
	// switchover, which loses no commit), which starts first when the
	// pods come back; a running backup is waited for. The replicas then
	// stop, the primary last, each shutting down cleanly. While
	// hibernated no scheduled backup is taken (the latest missed one is,
	// on resume), a DatabaseBackup fails at once, no failover happens and
	// the auto-pilot holds. Setting it back to false starts the pods
	// again, the primary first, with the data, spec and settings they
	// stopped with (changes made meanwhile apply as they start).
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Hibernate",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:booleanSwitch"}
	Hibernate bool `json:"hibernate,omitempty"`

	// paused stops dbpilot from changing anything for this Database until it is
	// set back to false. Status is still reported.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Paused",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:booleanSwitch"}
	Paused bool `json:"paused,omitempty"`
}

// BootstrapSpec is where a new Database's data comes from.
type BootstrapSpec struct {
	// fromBackup restores a backup into the new Database: its first pod
	// restores the base backup and replays the archived WAL (to targetTime
	// when set), then becomes the primary and its replicas clone it. The
	// source Database and its backups are only read. The restored data keeps
	// its databases and users; the Database's credentials are applied on top.
	// +optional
	FromBackup *FromBackup `json:"fromBackup,omitempty"`
}

// FromBackup names a backup: a DatabaseBackup in the namespace, or a
// destination and the name of a backup in it.
// +kubebuilder:validation:XValidation:rule="has(self.databaseBackupName) != has(self.backupName)",message="spec.bootstrap.fromBackup must set exactly one of databaseBackupName or backupName"
// +kubebuilder:validation:XValidation:rule="has(self.backupName) == has(self.destination)",message="spec.bootstrap.fromBackup.backupName and destination go together"
type FromBackup struct {
	// databaseBackupName names a Completed DatabaseBackup in the namespace.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	DatabaseBackupName string `json:"databaseBackupName,omitempty"`

	// destination is where the backup is, when it is not named by a
	// DatabaseBackup (its prefix included: the source Database's namespace
	// and name when the source left it unset).
	// +optional
	Destination *BackupDestination `json:"destination,omitempty"`

	// backupName is the backup's name in destination (a DatabaseBackup's
	// status.backupName).
	// +optional
	// +kubebuilder:validation:MaxLength=253
	BackupName string `json:"backupName,omitempty"`

	// targetTime restores the data as it was at this instant (RFC 3339):
	// the archived WAL (MariaDB, MySQL: binary logs, to the second) is
	// replayed up to the last commit before it. It must lie after the
	// backup's end. Unset: everything archived is replayed.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?(Z|[+-][0-9]{2}:[0-9]{2})$`
	TargetTime *metav1.Time `json:"targetTime,omitempty"`
}

// ReplicationSpec tunes replication.
type ReplicationSpec struct {
	// synchronous makes the primary acknowledge a commit only once replicas
	// have it on disk, so a failover loses no acknowledged commit. Without
	// it replication is asynchronous: faster commits, but a failover can
	// lose the last ones the primary acknowledged. While fewer replicas
	// than required are connected, commits wait, with one exception on
	// MariaDB: when a replica is cloned while no replica is connected (the
	// former primary after a failover, in a two-pod Database), the commits
	// waiting when the copy is taken are acknowledged; they are in the copy.
	// +optional
	Synchronous *SynchronousReplication `json:"synchronous,omitempty"`
}

// SynchronousReplication is how many replicas confirm each commit.
type SynchronousReplication struct {
	// count is how many replicas must have each commit before the primary
	// acknowledges it: any of them (PostgreSQL synchronous_standby_names
	// ANY count). MariaDB and MySQL use semi-synchronous replication, which
	// waits for one replica, so count must be 1 there. It must be less
	// than spec.replicas (and than the auto-pilot's minimum replicas).
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=15
	Count int32 `json:"count,omitempty"`
}

// TLSSpec is how clients reach the Database over TLS.
type TLSSpec struct {
	// required refuses every network connection without TLS, the
	// replicas' to their primary included (PostgreSQL: hostssl rules
	// only; MariaDB and MySQL: require_secure_transport). Changing it
	// restarts the pods one at a time, replicas first.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Require TLS",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:booleanSwitch"}
	Required bool `json:"required,omitempty"`

	// serverCertificateSecretName names a Secret in the Database's
	// namespace holding the certificate its pods serve instead of one
	// dbpilot issues: tls.crt (the certificate, then any intermediates),
	// tls.key, and ca.crt (the self-signed root clients and the replicas
	// verify it with), as cert-manager writes them. The certificate must
	// carry every name the Database is reached by (kubectl describe names
	// any it lacks). dbpilot only reads this Secret: it copies a usable
	// certificate into <name>-tls, where the pods take it (and each
	// renewal) without a restart; one that is unusable is not copied,
	// the pods keep the last good one, and the Database is Degraded. A
	// switch to a certificate of another authority (to this one, or
	// back) is staged: the pods trust its ca.crt beside the former one
	// before they serve it, and the former authority is dropped once
	// every pod serves it.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Server Certificate Secret",xDescriptors={"urn:alm:descriptor:io.kubernetes:Secret"}
	ServerCertificateSecretName string `json:"serverCertificateSecretName,omitempty"`

	// serverAltNames are names the server certificate carries beside the
	// cluster's: DNS names (db.example.com, or *.example.com) and IP
	// addresses clients outside the cluster reach the Database by, such
	// as spec.expose's load balancer, so they verify the server by name
	// (sslmode=verify-full). A change issues the certificate again, which
	// the pods take without a restart; a certificate of the user's
	// (serverCertificateSecretName) must carry them too.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self.all(n, isIP(n) || n.matches('^([*][.])?[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$'))",message="spec.tls.serverAltNames: each is a DNS name (lowercase letters, digits, - and ., *. first for a wildcard) or an IP address"
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Server Certificate Names",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:fieldGroup:tls"}
	ServerAltNames []string `json:"serverAltNames,omitempty"`

	// clientCertificateRequired has the application user log in over the
	// network with its password and, besides, the client certificate
	// dbpilot issues it: Secret <name>-app-tls (tls.crt, tls.key, and
	// ca.crt, the client authority in <name>-client-ca that the engines
	// trust), whose common name is the user's name. A login without that
	// certificate, or over a connection without TLS, is refused
	// (PostgreSQL: clientcert=verify-full; MariaDB and MySQL: REQUIRE
	// SUBJECT). The certificate is issued whether this is set or not, so
	// clients can take it before it is required, and renewed 30 days
	// before it expires. A client authority you replace is trusted beside
	// the former one first; the certificate is issued from it once every
	// pod trusts it (at most 5 minutes on), and the former one is dropped
	// 5 minutes after that. The
	// user's name must then be printable ASCII without a double quote.
	// The other users are left as they are.
	// Changing it restarts the pods one at a time, replicas first.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Require Client Certificate",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:booleanSwitch"}
	ClientCertificateRequired bool `json:"clientCertificateRequired,omitempty"`
}

// FailoverSpec says when a replica replaces the primary.
type FailoverSpec struct {
	// delaySeconds is how long the primary's pod may be not ready (or gone)
	// before dbpilot promotes the most advanced replica: 30 when unset, 0
	// fails over at once. A primary that comes back within the delay (a
	// restarted process, a rescheduled pod) stays the primary. Replication
	// is asynchronous: a failover can lose the transactions the primary
	// acknowledged in its last moments that no replica had received.
	// +optional
	// +kubebuilder:default=30
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=3600
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Failover Delay (seconds)",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:number"}
	DelaySeconds *int32 `json:"delaySeconds,omitempty"`
}

// StorageSpec is the persistent volume of each pod.
// +kubebuilder:validation:XValidation:rule="!has(self.size) || !has(oldSelf.size) || quantity(string(self.size)).compareTo(quantity(string(oldSelf.size))) >= 0",message="spec.storage.size cannot shrink: volumes can only grow"
// +kubebuilder:validation:XValidation:rule="has(self.storageClassName) == has(oldSelf.storageClassName) && (!has(self.storageClassName) || self.storageClassName == oldSelf.storageClassName)",message="spec.storage.storageClassName is immutable"
type StorageSpec struct {
	// size is the capacity of each pod's volume, for example 20Gi; 10Gi when
	// unset. It can grow (when the StorageClass allows volume expansion) but
	// never shrink.
	// +optional
	// +kubebuilder:default="10Gi"
	// +kubebuilder:validation:XValidation:rule="quantity(string(self)).compareTo(quantity('1Mi')) >= 0",message="spec.storage.size must be at least 1Mi"
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Volume Size",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:fieldGroup:storage","urn:alm:descriptor:com.tectonic.ui:text"}
	Size *resource.Quantity `json:"size,omitempty"`

	// storageClassName is the StorageClass of the volumes; the cluster's default
	// StorageClass when unset. It cannot be changed after creation.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Storage Class",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:fieldGroup:storage","urn:alm:descriptor:io.kubernetes:StorageClass"}
	StorageClassName *string `json:"storageClassName,omitempty"`
}

// BackupSpec schedules backups: each run creates a DatabaseBackup named
// <database>-<UTC time>, which takes a base backup (from a caught-up
// replica when there is one); the primary also archives its WAL
// (PostgreSQL) or binary logs (MariaDB, MySQL) continuously to the
// destination, for point-in-time recovery. MySQL's path (a CLONE LOCAL
// copy, mysqlbinlog) is unit-tested only, never yet run against a real
// MySQL server.
type BackupSpec struct {
	// schedule is when backups run, in cron format ("minute hour day-of-month
	// month day-of-week", for example "0 */6 * * *"), optionally with a
	// seconds field first as CloudNativePG takes it ("30 0 */6 * * *"), or
	// a macro such as @daily.
	// +required
	// +kubebuilder:validation:MaxLength=100
	// +kubebuilder:validation:Pattern=`^(@(yearly|annually|monthly|weekly|daily|midnight|hourly)|((\*|[0-5]?[0-9](-[0-5]?[0-9])?)(/[0-9]+)?(,(\*|[0-5]?[0-9](-[0-5]?[0-9])?)(/[0-9]+)?)* +)?(\*|[0-5]?[0-9](-[0-5]?[0-9])?)(/[0-9]+)?(,(\*|[0-5]?[0-9](-[0-5]?[0-9])?)(/[0-9]+)?)* +(\*|(1?[0-9]|2[0-3])(-(1?[0-9]|2[0-3]))?)(/[0-9]+)?(,(\*|(1?[0-9]|2[0-3])(-(1?[0-9]|2[0-3]))?)(/[0-9]+)?)* +(\*|\?|([1-9]|[12][0-9]|3[01])(-([1-9]|[12][0-9]|3[01]))?)(/[0-9]+)?(,(\*|([1-9]|[12][0-9]|3[01])(-([1-9]|[12][0-9]|3[01]))?)(/[0-9]+)?)* +(\*|([1-9]|1[0-2]|[A-Za-z]{3})(-([1-9]|1[0-2]|[A-Za-z]{3}))?)(/[0-9]+)?(,(\*|([1-9]|1[0-2]|[A-Za-z]{3})(-([1-9]|1[0-2]|[A-Za-z]{3}))?)(/[0-9]+)?)* +(\*|\?|([0-7]|[A-Za-z]{3})(-([0-7]|[A-Za-z]{3}))?)(/[0-9]+)?(,(\*|([0-7]|[A-Za-z]{3})(-([0-7]|[A-Za-z]{3}))?)(/[0-9]+)?)*)$`
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Backup Schedule",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:fieldGroup:backup","urn:alm:descriptor:com.tectonic.ui:text"}
	Schedule string `json:"schedule"`

	// retention is how many successful scheduled backups are kept: older
	// ones are deleted with their artifacts, and the archived WAL no kept
	// backup needs. DatabaseBackups created by hand are never pruned.
	// +optional
	// +kubebuilder:default=7
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Backups Kept",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:fieldGroup:backup","urn:alm:descriptor:com.tectonic.ui:number"}
	Retention int32 `json:"retention,omitempty"`

	// maxAge also deletes scheduled backups older than this: a number of
	// hours, days or weeks ("36h", "30d", "8w"). The newest backup is
	// always kept.
	// +optional
	// +kubebuilder:validation:Pattern=`^[1-9][0-9]{0,4}[hdw]$`
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Backups Kept For",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:fieldGroup:backup","urn:alm:descriptor:com.tectonic.ui:text"}
	MaxAge string `json:"maxAge,omitempty"`

	// destination is where backups are written: an S3-compatible object
	// store or an existing claim; when unset, a claim dbpilot creates,
	// <database>-backups, twice the size of spec.storage.size, ReadWriteMany
	// (every pod mounts it; on clusters without ReadWriteMany storage, use
	// s3 or a claim of your own). dbpilot never deletes that claim.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Backup Destination",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:fieldGroup:backup"}
	Destination *BackupDestination `json:"destination,omitempty"`
}

// BackupDestination is where backups go: exactly one of s3 or volume.
// +kubebuilder:validation:XValidation:rule="has(self.s3) != has(self.volume)",message="spec.backup.destination must set exactly one of s3 or volume"
type BackupDestination struct {
	// s3 writes backups to an S3-compatible object store.
	// +optional
	S3 *S3Destination `json:"s3,omitempty"`

	// volume writes backups to an existing PersistentVolumeClaim.
	// +optional
	Volume *VolumeDestination `json:"volume,omitempty"`
}

// S3Destination is a bucket in an S3-compatible object store.
type S3Destination struct {
	// bucket is the bucket name.
	// +required
	// +kubebuilder:validation:MinLength=3
	// +kubebuilder:validation:MaxLength=63
	Bucket string `json:"bucket"`

	// prefix is prepended to every object key; the Database's namespace and
	// name when unset.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	Prefix string `json:"prefix,omitempty"`

	// endpoint is the URL of the object store, for stores other than AWS S3.
	// +optional
	// +kubebuilder:validation:Pattern=`^https?://`
	// +kubebuilder:validation:MaxLength=2048
	Endpoint string `json:"endpoint,omitempty"`

	// region is the bucket's region.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	Region string `json:"region,omitempty"`

	// credentialsSecretName names a Secret in the Database's namespace with the
	// keys access-key-id and secret-access-key, and optionally ca.crt: a PEM
	// bundle that signs an https endpoint's certificate (the system's roots
	// when absent).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	CredentialsSecretName string `json:"credentialsSecretName"`
}

// VolumeDestination is an existing PersistentVolumeClaim that receives
// backups. Every pod of the Database mounts it, so it needs an access mode
// that allows that (ReadWriteMany, or ReadWriteOnce on a single node).
type VolumeDestination struct {
	// claimName names the PersistentVolumeClaim in the Database's namespace.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	ClaimName string `json:"claimName"`
}
