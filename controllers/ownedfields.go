package controllers

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	policyv1ac "k8s.io/client-go/applyconfigurations/policy/v1"
	toolscache "k8s.io/client-go/tools/cache"
)

// OwnedFieldsHashAnnotation holds, on the manager's cached copy of an object
// it server-side applies, the hash of the fields it owns there (what
// ExtractX returns for FieldOwner); the managed fields themselves, from which
// the hash is computed, are dropped. It exists only in the manager's memory:
// no object dbpilot writes carries it.
const OwnedFieldsHashAnnotation = "dbpilot.io/cached-owned-fields-sha256"

// TransformOwnedFields returns the cache transform for the kinds the
// reconciler server-side applies (StatefulSets, Services, ConfigMaps,
// PodDisruptionBudgets). It extracts the fields FieldOwner owns once per
// version of an object, records their hash, and drops the managed fields,
// which are a third or more of a cached object's size; a StatefulSet also
// loses its pod template's spec, which only the extraction read. An object
// dbpilot did not apply (the designation ConfigMap, created and updated) or
// whose fields do not extract is left whole.
func TransformOwnedFields() toolscache.TransformFunc {
	return func(in any) (any, error) {
		switch obj := in.(type) {
		case *appsv1.StatefulSet:
			if recordOwnedFields(&obj.ObjectMeta, func() (any, error) { return appsv1ac.ExtractStatefulSet(obj, FieldOwner) }) {
				obj.Spec.Template.Spec = corev1.PodSpec{}
			}
		case *corev1.Service:
			recordOwnedFields(&obj.ObjectMeta, func() (any, error) { return corev1ac.ExtractService(obj, FieldOwner) })
		case *corev1.ConfigMap:
			recordOwnedFields(&obj.ObjectMeta, func() (any, error) { return corev1ac.ExtractConfigMap(obj, FieldOwner) })
		case *policyv1.PodDisruptionBudget:
			recordOwnedFields(&obj.ObjectMeta, func() (any, error) { return policyv1ac.ExtractPodDisruptionBudget(obj, FieldOwner) })
		}
		return in, nil
	}
}

// recordOwnedFields replaces meta's managed fields by the hash of what
// extract returns, when FieldOwner applied the object and the extraction
// works, and reports whether it did.
func recordOwnedFields(meta *metav1.ObjectMeta, extract func() (any, error)) bool {
	if !appliedBy(meta.ManagedFields, FieldOwner) {
		return false
	}
	owned, err := extract()
	if err != nil {
		return false
	}
	hash, err := OwnedFieldsHash(owned)
	if err != nil {
		return false
	}
	if meta.Annotations == nil {
		meta.Annotations = map[string]string{}
	}
	meta.Annotations[OwnedFieldsHashAnnotation] = hash
	meta.ManagedFields = nil
	return true
}

// appliedBy reports whether manager server-side applied some of the fields.
func appliedBy(fields []metav1.ManagedFieldsEntry, manager string) bool {
	for _, f := range fields {
		if f.Manager == manager && f.Operation == metav1.ManagedFieldsOperationApply && f.Subresource == "" {
			return true
		}
	}
	return false
}

// OwnedFieldsHash is the hash of an apply configuration: equal for two
// configurations that set the same fields to the same values.
func OwnedFieldsHash(config any) (string, error) {
	data, err := json.Marshal(config)
	if err != nil {
		return "", fmt.Errorf("encoding %T: %w", config, err)
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:]), nil
}
