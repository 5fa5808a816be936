// Package designation reads and moves a Database's designated primary, which
// its designation ConfigMap records for the operator and, mounted as files,
// for every instance. Moving it is the one decision of a failover or a
// switchover: an Update that carries the resourceVersion the designation was
// read at, so of two writers that read the same designation (two operators,
// or one racing its own restart) exactly one succeeds.
package designation

import (
	"context"
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dbpilot/dbpilot/instance/layout"
)

// Annotations on the designation ConfigMap about the move in progress.
const (
	// AnnotationFormerPrimary names the primary a failover replaced, until
	// the new one serves.
	AnnotationFormerPrimary = "dbpilot.io/former-primary"
	// AnnotationPrimaryLostAt is when the former primary stopped serving
	// (RFC 3339), the start of the time without a writable primary.
	AnnotationPrimaryLostAt = "dbpilot.io/primary-lost-at"
	// AnnotationReason is why the designation last moved: ReasonFailover
	// or ReasonSwitchover.
	AnnotationReason = "dbpilot.io/move-reason"
	// AnnotationDesignatedAt is when the designation last moved, or when an
	// unfenced primary is due to serve again (RFC 3339): the primary gets
	// the whole failover delay from then.
	AnnotationDesignatedAt = "dbpilot.io/designated-at"
)

// Why a designation moves.
const (
	// ReasonFailover: the primary was lost.
	ReasonFailover = "failover"
	// ReasonSwitchover: the primary hands over to a caught-up replica.
	ReasonSwitchover = "switchover"
)

// Designation is the designated primary as a ConfigMap records it.
type Designation struct {
	// Primary is the designated primary's pod name.
	Primary string
	// Epoch counts the designations; the first is 1.
	Epoch int64
	// FormerPrimary is the primary a failover in progress replaces; empty
	// when none is in progress.
	FormerPrimary string
	// PrimaryLostAt is when the former primary stopped serving, while a
	// failover is in progress.
	PrimaryLostAt time.Time
	// Reason is why the designation last moved; empty for the first.
	Reason string
	// DesignatedAt is when the designation last moved; zero for the first.
	DesignatedAt time.Time
	// Object is the ConfigMap as read.
	Object *corev1.ConfigMap
}

// Read reads the designation of a ConfigMap.
func Read(cm *corev1.ConfigMap) (Designation, error) {
	d := Designation{Primary: cm.Data[layout.KeyPrimary], Object: cm}
	if d.Primary == "" {
		return d, fmt.Errorf("ConfigMap %s names no primary (key %q)", cm.Name, layout.KeyPrimary)
	}
	epoch, err := strconv.ParseInt(cm.Data[layout.KeyEpoch], 10, 64)
	if err != nil || epoch < 1 {
		return d, fmt.Errorf("ConfigMap %s: key %q is not a positive number", cm.Name, layout.KeyEpoch)
	}
	d.Epoch = epoch
	d.FormerPrimary = cm.Annotations[AnnotationFormerPrimary]
	d.Reason = cm.Annotations[AnnotationReason]
	d.PrimaryLostAt, _ = time.Parse(time.RFC3339, cm.Annotations[AnnotationPrimaryLostAt])
	d.DesignatedAt, _ = time.Parse(time.RFC3339, cm.Annotations[AnnotationDesignatedAt])
	return d, nil
}

// Move designates next the primary in place of d's, at the next epoch, for
// a reason (ReasonFailover, ReasonSwitchover), recording that the former
// primary stopped serving at lostAt. It fails with a
// Conflict when the ConfigMap changed since d was read: someone else moved
// it first, and the caller must read it again.
func Move(ctx context.Context, c client.Client, d Designation, next, reason string, lostAt, now time.Time) (Designation, error) {
	cm := d.Object.DeepCopy()
	cm.Data[layout.KeyPrimary] = next
	cm.Data[layout.KeyEpoch] = strconv.FormatInt(d.Epoch+1, 10)
	if cm.Annotations == nil {
		cm.Annotations = map[string]string{}
	}
	cm.Annotations[AnnotationFormerPrimary] = d.Primary
	cm.Annotations[AnnotationReason] = reason
	cm.Annotations[AnnotationPrimaryLostAt] = lostAt.UTC().Format(time.RFC3339)
	cm.Annotations[AnnotationDesignatedAt] = now.UTC().Format(time.RFC3339)
	if err := c.Update(ctx, cm); err != nil {
		return d, err
	}
	return Read(cm)
}

// Restart gives the designated primary until from to serve before a
// failover's delay starts counting (an unfenced primary starts its engine
// again). Like Move, it fails with a Conflict on a stale read.
func Restart(ctx context.Context, c client.Client, d Designation, from time.Time) (Designation, error) {
	cm := d.Object.DeepCopy()
	if cm.Annotations == nil {
		cm.Annotations = map[string]string{}
	}
	cm.Annotations[AnnotationDesignatedAt] = from.UTC().Format(time.RFC3339)
	if err := c.Update(ctx, cm); err != nil {
		return d, err
	}
	return Read(cm)
}

// Settle records that the designated primary serves: the failover in
// progress is over. Like Move, it fails with a Conflict on a stale read.
func Settle(ctx context.Context, c client.Client, d Designation) (Designation, error) {
	cm := d.Object.DeepCopy()
	delete(cm.Annotations, AnnotationFormerPrimary)
	delete(cm.Annotations, AnnotationPrimaryLostAt)
	if err := c.Update(ctx, cm); err != nil {
		return d, err
	}
	return Read(cm)
}
