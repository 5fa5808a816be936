package controllers

import (
	corev1 "k8s.io/api/core/v1"
)

// TransformPodForCache trims a pod to what dbpilot reads from its pods
// before the pod enters the cache: the metadata (labels, annotations,
// owners, deletion) without managed fields, the node, and the status it
// judges readiness, roles, restores and the instance program's address by,
// and each container's resources, asked and applied (in-place resizes).
// The rest of the spec (images, environment, probes, volumes) is most of a
// pod's size and is never read: dbpilot decides what a pod should be from its
// StatefulSet. A field read from a cached pod must be kept here; pods are
// only ever merge patched from a cached copy, so a trimmed field is never
// written back.
func TransformPodForCache(in any) (any, error) {
	pod, ok := in.(*corev1.Pod)
	if !ok {
		return in, nil
	}
	pod.ManagedFields = nil
	pod.Spec = corev1.PodSpec{NodeName: pod.Spec.NodeName, Containers: containerResourcesOnly(pod.Spec.Containers)}
	pod.Status = corev1.PodStatus{
		Phase:                 pod.Status.Phase,
		Conditions:            pod.Status.Conditions,
		Message:               pod.Status.Message,
		Reason:                pod.Status.Reason,
		HostIP:                pod.Status.HostIP,
		PodIP:                 pod.Status.PodIP,
		PodIPs:                pod.Status.PodIPs,
		StartTime:             pod.Status.StartTime,
		InitContainerStatuses: containerStatesOnly(pod.Status.InitContainerStatuses),
		ContainerStatuses:     containerStatesOnly(pod.Status.ContainerStatuses),
	}
	return pod, nil
}

// containerResourcesOnly keeps each container's name and resources, which
// an in-place resize compares with its tier's.
func containerResourcesOnly(containers []corev1.Container) []corev1.Container {
	if containers == nil {
		return nil
	}
	out := make([]corev1.Container, len(containers))
	for i, c := range containers {
		out[i] = corev1.Container{Name: c.Name, Resources: c.Resources}
	}
	return out
}

// containerStatesOnly keeps each container's name, readiness, restarts,
// states and the resources its kubelet reports applied (an in-place resize
// waits for them), and drops its image and mounts.
func containerStatesOnly(statuses []corev1.ContainerStatus) []corev1.ContainerStatus {
	if statuses == nil {
		return nil
	}
	out := make([]corev1.ContainerStatus, len(statuses))
	for i, s := range statuses {
		out[i] = corev1.ContainerStatus{
			Name:                 s.Name,
			Ready:                s.Ready,
			Started:              s.Started,
			RestartCount:         s.RestartCount,
			State:                s.State,
			LastTerminationState: s.LastTerminationState,
			Resources:            s.Resources,
		}
	}
	return out
}
