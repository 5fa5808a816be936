package controllers

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
)

// liveOwned is what the reconciler owns on a live object: the hash of its
// owned fields, which the cache records (TransformOwnedFields), or else a
// way to extract them from the object's managed fields.
type liveOwned[T any] struct {
	hash    string
	extract func() (T, error)
}

// matches reports whether desired sets exactly the fields, to exactly the
// values, that the reconciler owns on the live object.
func (o *liveOwned[T]) matches(desired T) (bool, error) {
	if o.hash != "" {
		hash, err := OwnedFieldsHash(desired)
		return hash == o.hash, err
	}
	current, err := o.extract()
	if err != nil {
		return false, fmt.Errorf("extracting owned fields: %w", err)
	}
	return equality.Semantic.DeepEqual(current, desired), nil
}

// applyIfChanged server-side applies desired unless it is what this
// reconciler already owns on the live object, so a pass that changes
// nothing writes nothing. owned is nil when the object does not exist yet.
// It reports whether it wrote.
func applyIfChanged[T runtime.ApplyConfiguration](ctx context.Context, c client.Client, desired T, owned *liveOwned[T]) (bool, error) {
	if owned != nil {
		same, err := owned.matches(desired)
		if err != nil {
			return false, err
		}
		if same {
			return false, nil
		}
	}
	if err := c.Apply(ctx, desired, client.FieldOwner(FieldOwner), client.ForceOwnership); err != nil {
		return false, err
	}
	return true, nil
}

// applyStatus server-side applies the given status fields of db under a
// field owner: the reconciler and the auto-pilot each own their part of the
// status, and fields an owner stops sending are removed.
func applyStatus(ctx context.Context, c client.Client, db *dbpilotv1alpha1.Database, status map[string]any, owner string) error {
	u := &unstructured.Unstructured{Object: map[string]any{"status": status}}
	u.SetGroupVersionKind(dbpilotv1alpha1.GroupVersion.WithKind("Database"))
	u.SetNamespace(db.Namespace)
	u.SetName(db.Name)
	if err := c.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(owner), client.ForceOwnership); err != nil {
		return fmt.Errorf("writing status of %s: %w", client.ObjectKeyFromObject(db), err)
	}
	return nil
}
