package promserver

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// KubernetesDiscovery serves Prometheus' HTTP service discovery
// (http_sd_configs) with the targets and __meta_kubernetes_* labels that
// Prometheus' own Kubernetes discovery gives, read from the API server at
// every refresh: /pods?namespace=NS (role pod: a target per container port)
// and /nodes (role node: each kubelet's endpoint). Debian's Prometheus is
// built without Kubernetes discovery; with this, the relabelling a
// PodMonitor renders applies unchanged.
type KubernetesDiscovery struct {
	// URL is the server's base URL.
	URL    string
	server *http.Server
}

// targetGroup is one entry of the http_sd answer.
type targetGroup struct {
	Targets []string          `json:"targets"`
	Labels  map[string]string `json:"labels"`
}

// StartKubernetesDiscovery serves discovery on 127.0.0.1 from the API
// server client reaches.
func StartKubernetesDiscovery(client kubernetes.Interface) (*KubernetesDiscovery, error) {
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /pods", func(w http.ResponseWriter, r *http.Request) {
		pods, err := client.CoreV1().Pods(r.URL.Query().Get("namespace")).List(r.Context(), metav1.ListOptions{})
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		groups := []targetGroup{}
		for i := range pods.Items {
			groups = append(groups, podTargets(&pods.Items[i])...)
		}
		writeGroups(w, groups)
	})
	mux.HandleFunc("GET /nodes", func(w http.ResponseWriter, r *http.Request) {
		nodes, err := client.CoreV1().Nodes().List(r.Context(), metav1.ListOptions{})
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		groups := []targetGroup{}
		for i := range nodes.Items {
			if group, ok := nodeTarget(&nodes.Items[i]); ok {
				groups = append(groups, group)
			}
		}
		writeGroups(w, groups)
	})
	d := &KubernetesDiscovery{URL: "http://" + listener.Addr().String(), server: &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}}
	go func() { _ = d.server.Serve(listener) }()
	return d, nil
}

// Stop stops serving.
func (d *KubernetesDiscovery) Stop() error { return d.server.Close() }

func writeGroups(w http.ResponseWriter, groups []targetGroup) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(groups)
}

// podTargets are a pod's targets as Prometheus' role pod makes them: one
// per container port, at the pod's IP.
func podTargets(pod *corev1.Pod) []targetGroup {
	if pod.Status.PodIP == "" {
		return nil
	}
	common := map[string]string{
		"__meta_kubernetes_namespace":     pod.Namespace,
		"__meta_kubernetes_pod_name":      pod.Name,
		"__meta_kubernetes_pod_ip":        pod.Status.PodIP,
		"__meta_kubernetes_pod_uid":       string(pod.UID),
		"__meta_kubernetes_pod_node_name": pod.Spec.NodeName,
		"__meta_kubernetes_pod_host_ip":   pod.Status.HostIP,
		"__meta_kubernetes_pod_phase":     string(pod.Status.Phase),
		"__meta_kubernetes_pod_ready":     strconv.FormatBool(podReady(pod)),
	}
	addObjectLabels(common, "__meta_kubernetes_pod_", pod.Labels, pod.Annotations)
	var groups []targetGroup
	for _, c := range pod.Spec.Containers {
		for _, port := range c.Ports {
			labels := map[string]string{
				"__meta_kubernetes_pod_container_name":          c.Name,
				"__meta_kubernetes_pod_container_image":         c.Image,
				"__meta_kubernetes_pod_container_port_name":     port.Name,
				"__meta_kubernetes_pod_container_port_number":   strconv.Itoa(int(port.ContainerPort)),
				"__meta_kubernetes_pod_container_port_protocol": string(port.Protocol),
			}
			for k, v := range common {
				labels[k] = v
			}
			address := net.JoinHostPort(pod.Status.PodIP, strconv.Itoa(int(port.ContainerPort)))
			groups = append(groups, targetGroup{Targets: []string{address}, Labels: labels})
		}
	}
	return groups
}

// nodeTarget is a node's kubelet, as Prometheus' role node finds it: the
// node's first internal address and the kubelet's port, with the node's
// name as the instance.
func nodeTarget(node *corev1.Node) (targetGroup, bool) {
	port := node.Status.DaemonEndpoints.KubeletEndpoint.Port
	labels := map[string]string{"__meta_kubernetes_node_name": node.Name, "instance": node.Name}
	addObjectLabels(labels, "__meta_kubernetes_node_", node.Labels, node.Annotations)
	address := ""
	for _, a := range node.Status.Addresses {
		labels["__meta_kubernetes_node_address_"+string(a.Type)] = a.Address
		if address == "" && a.Type == corev1.NodeInternalIP {
			address = a.Address
		}
	}
	if address == "" || port == 0 {
		return targetGroup{}, false
	}
	return targetGroup{Targets: []string{net.JoinHostPort(address, fmt.Sprint(port))}, Labels: labels}, true
}

// addObjectLabels adds an object's labels and annotations under Prometheus'
// names: <prefix>label_<name>, <prefix>labelpresent_<name>, and the same
// for annotations, with the name's invalid characters made underscores.
func addObjectLabels(into map[string]string, prefix string, labels, annotations map[string]string) {
	for k, v := range labels {
		into[prefix+"label_"+sanitize(k)] = v
		into[prefix+"labelpresent_"+sanitize(k)] = "true"
	}
	for k, v := range annotations {
		into[prefix+"annotation_"+sanitize(k)] = v
		into[prefix+"annotationpresent_"+sanitize(k)] = "true"
	}
}

// sanitize is Prometheus' label name sanitizing: every character that is
// not a letter, digit or underscore becomes an underscore.
func sanitize(name string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' {
			return r
		}
		return '_'
	}, name)
}

func podReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
