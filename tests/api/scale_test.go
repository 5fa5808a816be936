package api_test

import (
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// scaleTo is a Scale body setting obj's replicas.
func scaleTo(obj *unstructured.Unstructured, replicas int32) *autoscalingv1.Scale {
	return &autoscalingv1.Scale{
		ObjectMeta: metav1.ObjectMeta{Name: obj.GetName(), Namespace: obj.GetNamespace()},
		Spec:       autoscalingv1.ScaleSpec{Replicas: replicas},
	}
}
