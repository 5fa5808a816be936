package v1alpha1

import (
	"fmt"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// BackupClaimName is the claim dbpilot creates for the backups of a
// Database whose spec.backup has no destination.
func (d *Database) BackupClaimName() string { return d.Name + "-backups" }

// BackupDestination is where the Database's backups go, defaults resolved:
// the claim dbpilot creates when no destination is set, and the
// Database's namespace and name as an S3 prefix when none is set. Nil
// without spec.backup.
func (d *Database) BackupDestination() *BackupDestination {
	if d.Spec.Backup == nil {
		return nil
	}
	dest := d.Spec.Backup.Destination
	switch {
	case dest == nil:
		return &BackupDestination{Volume: &VolumeDestination{ClaimName: d.BackupClaimName()}}
	case dest.S3 != nil && dest.S3.Prefix == "":
		s3 := *dest.S3
		s3.Prefix = d.Namespace + "/" + d.Name
		return &BackupDestination{S3: &s3}
	}
	return dest.DeepCopy()
}

// CreatesBackupClaim reports whether dbpilot creates the backup claim.
func (d *Database) CreatesBackupClaim() bool {
	return d.Spec.Backup != nil && d.Spec.Backup.Destination == nil
}

// BackupMaxAge is spec.backup.maxAge as a duration; 0 when unset.
func (d *Database) BackupMaxAge() (time.Duration, error) {
	if d.Spec.Backup == nil || d.Spec.Backup.MaxAge == "" {
		return 0, nil
	}
	s := d.Spec.Backup.MaxAge
	n, err := strconv.Atoi(s[:len(s)-1])
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("spec.backup.maxAge %q is not a number of hours, days or weeks", s)
	}
	unit := map[byte]time.Duration{'h': time.Hour, 'd': 24 * time.Hour, 'w': 7 * 24 * time.Hour}[s[len(s)-1]]
	if unit == 0 {
		return 0, fmt.Errorf("spec.backup.maxAge %q does not end in h, d or w", s)
	}
	return time.Duration(n) * unit, nil
}

// RestoreSource is a backup to restore, resolved: where it is, its name,
// and the instant to stop at.
type RestoreSource struct {
	Destination BackupDestination `json:"destination"`
	BackupName  string            `json:"backupName"`
	TargetTime  *metav1.Time      `json:"targetTime,omitempty"`
}
