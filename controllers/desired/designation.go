package desired

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
	"github.com/dbpilot/dbpilot/instance/layout"
)

// DesignationConfigMap is the first designation of a Database: the pod of
// ordinal 0 is the primary, epoch 1. dbpilot creates it once; failovers and
// switchovers change it with optimistic concurrency, never by apply.
func DesignationConfigMap(db *dbpilotv1alpha1.Database) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Name:            db.DesignationConfigMapName(),
			Namespace:       db.Namespace,
			Labels:          db.CommonLabels(),
			OwnerReferences: []metav1.OwnerReference{db.OwnerReference()},
		},
		Data: map[string]string{
			layout.KeyPrimary: db.PrimaryPodName(),
			layout.KeyEpoch:   strconv.Itoa(1),
		},
	}
}
