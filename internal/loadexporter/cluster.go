package loadexporter

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
	"github.com/dbpilot/dbpilot/controllers/desired"
)

// DatabasePods lists the ready pods of the Database namespace/name from the
// cluster, with the role and tier dbpilot gave them.
func DatabasePods(c client.Client, namespace, name string) PodLister {
	return func(ctx context.Context) ([]Pod, error) {
		list := &corev1.PodList{}
		if err := c.List(ctx, list, client.InNamespace(namespace), client.MatchingLabels{dbpilotv1alpha1.LabelDatabase: name}); err != nil {
			return nil, err
		}
		var pods []Pod
		for _, pod := range list.Items {
			if !ready(&pod) || !pod.DeletionTimestamp.IsZero() {
				continue
			}
			pods = append(pods, Pod{
				Namespace: pod.Namespace, Name: pod.Name,
				Primary: pod.Labels[dbpilotv1alpha1.LabelRole] == dbpilotv1alpha1.RolePrimary,
				Tier:    dbpilotv1alpha1.Tier(pod.Annotations[desired.AnnotationTier]),
			})
		}
		return pods, nil
	}
}

func ready(pod *corev1.Pod) bool {
	for _, cond := range pod.Status.Conditions {
		if cond.Type == corev1.PodReady {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}
