package controllers

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// applyIfChanged server-side applies desired unless the fields this
// reconciler already owns on the live object (extracted from its managed
// fields) equal it, so a pass that changes nothing writes nothing. extract is
// nil when the object does not exist yet. It reports whether it wrote.
func applyIfChanged[T runtime.ApplyConfiguration](ctx context.Context, c client.Client, desired T, extract func() (T, error)) (bool, error) {
	if extract != nil {
		current, err := extract()
		if err != nil {
			return false, fmt.Errorf("extracting owned fields: %w", err)
		}
		if equality.Semantic.DeepEqual(current, desired) {
			return false, nil
		}
	}
	if err := c.Apply(ctx, desired, client.FieldOwner(FieldOwner), client.ForceOwnership); err != nil {
		return false, err
	}
	return true, nil
}
