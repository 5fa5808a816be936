package desired

import (
	"encoding/json"

	corev1 "k8s.io/api/core/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
	"github.com/dbpilot/dbpilot/instance/layout"
)

// Volume names of the backup destination and the restore source.
const (
	backupCredentialsVolumeName  = "backup-credentials"
	backupVolumeName             = "backup-volume"
	restoreCredentialsVolumeName = "restore-credentials"
	restoreVolumeName            = "restore-volume"
)

// BackupTarget is a destination as a pod sees it, its credentials (S3) or
// its claim (a volume) mounted at credentialsDir or volumeDir.
func BackupTarget(dest dbpilotv1alpha1.BackupDestination, credentialsDir, volumeDir string) layout.BackupTarget {
	if dest.S3 != nil {
		return layout.BackupTarget{S3: &layout.S3Target{Endpoint: dest.S3.Endpoint, Region: dest.S3.Region,
			Bucket: dest.S3.Bucket, Prefix: dest.S3.Prefix, CredentialsDir: credentialsDir}}
	}
	return layout.BackupTarget{Dir: volumeDir}
}

// RestoreSource is the Database's resolved restore source, from its
// AnnotationRestoreSource; nil when it restores nothing (or the source is
// not resolved yet).
func RestoreSource(db *dbpilotv1alpha1.Database) *dbpilotv1alpha1.RestoreSource {
	value := db.Annotations[dbpilotv1alpha1.AnnotationRestoreSource]
	if value == "" || db.Spec.Bootstrap == nil || db.Spec.Bootstrap.FromBackup == nil {
		return nil
	}
	var src dbpilotv1alpha1.RestoreSource
	if json.Unmarshal([]byte(value), &src) != nil {
		return nil
	}
	return &src
}

// backupEnv is the database container's environment for backups: the
// destination (which the instance program and the WAL archiving it runs
// read) and the restore source.
func backupEnv(db *dbpilotv1alpha1.Database) []*corev1ac.EnvVarApplyConfiguration {
	var env []*corev1ac.EnvVarApplyConfiguration
	if dest := db.BackupDestination(); dest != nil {
		env = append(env, corev1ac.EnvVar().WithName(layout.BackupTargetEnv).
			WithValue(mustJSON(BackupTarget(*dest, layout.BackupCredentialsDir, layout.BackupVolumeDir))))
	}
	if src := RestoreSource(db); src != nil {
		source := layout.RestoreSource{Target: BackupTarget(src.Destination, layout.RestoreCredentialsDir, layout.RestoreVolumeDir),
			Backup: src.BackupName}
		if src.TargetTime != nil {
			t := src.TargetTime.UTC()
			source.TargetTime = &t
		}
		env = append(env, corev1ac.EnvVar().WithName(layout.RestoreSourceEnv).WithValue(mustJSON(source)))
	}
	return env
}

// backupVolumes are the volumes of the destination and the restore source,
// with their mounts.
func backupVolumes(db *dbpilotv1alpha1.Database) ([]*corev1ac.VolumeApplyConfiguration, []*corev1ac.VolumeMountApplyConfiguration) {
	var volumes []*corev1ac.VolumeApplyConfiguration
	var mounts []*corev1ac.VolumeMountApplyConfiguration
	add := func(dest dbpilotv1alpha1.BackupDestination, credentialsName, credentialsDir, volumeName, volumeDir string, readOnly bool) {
		if dest.S3 != nil {
			volumes = append(volumes, corev1ac.Volume().WithName(credentialsName).WithSecret(corev1ac.SecretVolumeSource().
				WithSecretName(dest.S3.CredentialsSecretName).WithDefaultMode(0o440)))
			mounts = append(mounts, corev1ac.VolumeMount().WithName(credentialsName).WithMountPath(credentialsDir).WithReadOnly(true))
			return
		}
		volumes = append(volumes, corev1ac.Volume().WithName(volumeName).WithPersistentVolumeClaim(
			corev1ac.PersistentVolumeClaimVolumeSource().WithClaimName(dest.Volume.ClaimName).WithReadOnly(readOnly)))
		mounts = append(mounts, corev1ac.VolumeMount().WithName(volumeName).WithMountPath(volumeDir).WithReadOnly(readOnly))
	}
	if dest := db.BackupDestination(); dest != nil {
		add(*dest, backupCredentialsVolumeName, layout.BackupCredentialsDir, backupVolumeName, layout.BackupVolumeDir, false)
	}
	if src := RestoreSource(db); src != nil {
		// Restoring only reads the source.
		add(src.Destination, restoreCredentialsVolumeName, layout.RestoreCredentialsDir, restoreVolumeName, layout.RestoreVolumeDir, true)
	}
	return volumes, mounts
}

// BackupClaim is the claim of a Database's backups when spec.backup names
// no destination: twice the data volume's size, mounted by every pod. It
// has no owner: deleting the Database never deletes its backups.
func BackupClaim(db *dbpilotv1alpha1.Database) *corev1ac.PersistentVolumeClaimApplyConfiguration {
	size := db.SpecStorageSize()
	size.Add(size)
	spec := corev1ac.PersistentVolumeClaimSpec().
		WithAccessModes(corev1.ReadWriteMany).
		WithVolumeMode(corev1.PersistentVolumeFilesystem).
		WithResources(corev1ac.VolumeResourceRequirements().
			WithRequests(corev1.ResourceList{corev1.ResourceStorage: size}))
	if class := db.StorageClassName(); class != nil {
		spec.WithStorageClassName(*class)
	}
	return corev1ac.PersistentVolumeClaim(db.BackupClaimName(), db.Namespace).
		WithLabels(db.CommonLabels()).
		WithSpec(spec)
}

func mustJSON(v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		// Plain structs of strings; marshalling cannot fail.
		panic(err)
	}
	return string(data)
}
