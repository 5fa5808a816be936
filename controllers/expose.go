package controllers

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dbpilot/dbpilot/controllers/desired"
)

// exposeConflictPoll is how often a Database whose exposed Service's name
// is taken by a Service of the user's looks again.
const exposeConflictPoll = 30 * time.Second

// reconcileExternalServices applies the Services spec.expose asks for and
// deletes those of this Database it no longer asks for. A Service of that
// name that is not the Database's (the user's own) is neither written nor
// deleted: the Database shows it (exposeProblem).
func (r *DatabaseReconciler) reconcileExternalServices(ctx context.Context, s *scope) error {
	services := desired.ExternalServices(s.db, s.replicas)
	for _, name := range slices.Sorted(maps.Keys(services)) {
		want := services[name]
		existing := &corev1.Service{}
		owned, err := extractor(ctx, r.Client, s.db.Namespace, name, existing, func() (*corev1ac.ServiceApplyConfiguration, error) {
			return corev1ac.ExtractService(existing, FieldOwner)
		})
		if err != nil {
			return err
		}
		if owned != nil && !metav1.IsControlledBy(existing, s.db) {
			if want != nil {
				s.exposeProblem = serviceConflict(name)
			}
			continue
		}
		if want == nil {
			if owned != nil {
				if err := r.Client.Delete(ctx, existing); client.IgnoreNotFound(err) != nil {
					return fmt.Errorf("deleting Service %s: %w", name, err)
				}
			}
			continue
		}
		if owned == nil {
			// The cache holds only dbpilot's Services: the user's own of
			// that name is looked for directly.
			err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: s.db.Namespace, Name: name}, &corev1.Service{})
			if err == nil {
				s.exposeProblem = serviceConflict(name)
				continue
			}
			if !apierrors.IsNotFound(err) {
				return fmt.Errorf("reading Service %s: %w", name, err)
			}
		}
		if _, err := applyIfChanged(ctx, r.Client, want, owned); err != nil {
			return fmt.Errorf("applying Service %s: %w", name, err)
		}
	}
	return nil
}

// serviceConflict says that the Service name spec.expose asks for is
// another's.
func serviceConflict(name string) string {
	return fmt.Sprintf("spec.expose: Service %s exists and is not this Database's; rename or delete it", name)
}
