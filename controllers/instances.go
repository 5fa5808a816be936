package controllers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
	"github.com/dbpilot/dbpilot/instance/layout"
)

// instanceStatusTimeout bounds one request to an instance program.
const instanceStatusTimeout = time.Second

// instancePollInterval is how often a Database whose pods run is looked at
// again, so roles and replication follow what the instances report.
const instancePollInterval = 30 * time.Second

// instanceSettlingPoll is how often a Database is looked at while its
// instances settle (a replica not yet streaming or behind, a running pod
// whose instance program does not answer yet), so its status shows a
// replica caught up within seconds, not at the next slow poll.
const instanceSettlingPoll = 5 * time.Second

// settledLag is the replication lag under which a streaming replica counts
// as caught up: the status reports lag in whole seconds.
const settledLag = 0.5

// readInstances asks the instance program of every running pod for its
// status; a pod that does not answer is left out.
func readInstances(ctx context.Context, s *scope) map[string]layout.InstanceStatus {
	reports := map[string]layout.InstanceStatus{}
	for i := range s.pods {
		pod := &s.pods[i]
		if pod.Status.PodIP == "" || pod.Status.Phase != corev1.PodRunning || !pod.DeletionTimestamp.IsZero() {
			continue
		}
		if status, err := readInstance(ctx, s.instanceTarget(pod)); err == nil {
			reports[pod.Name] = status
		}
	}
	return reports
}

func readInstance(ctx context.Context, target instanceTarget) (layout.InstanceStatus, error) {
	var status layout.InstanceStatus
	err := getInstance(ctx, target, layout.StatusPath, &status)
	return status, err
}

// readCertificates asks an instance program what certificate files its pod
// has mounted and its engine serves.
func readCertificates(ctx context.Context, target instanceTarget) (layout.CertificateStatus, error) {
	var status layout.CertificateStatus
	err := getInstance(ctx, target, layout.CertificatesPath, &status)
	return status, err
}

// errNotServed is getInstance's error for a path the instance program
// does not serve: one from before it did.
var errNotServed = errors.New("the instance program does not serve it")

// getInstance reads the JSON an instance program serves at path into out.
func getInstance(ctx context.Context, target instanceTarget, path string, out any) error {
	ctx, cancel := context.WithTimeout(ctx, instanceStatusTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target.base+path, nil)
	if err != nil {
		return err
	}
	resp, err := target.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
		return json.NewDecoder(resp.Body).Decode(out)
	case http.StatusNotFound:
		return fmt.Errorf("instance %s%s: %w", target.base, path, errNotServed)
	}
	return fmt.Errorf("instance %s%s: %s", target.base, path, resp.Status)
}

// instancesSettling tells whether any running pod's instance is still
// settling: it does not answer, or it is a replica not streaming or behind
// its primary.
func instancesSettling(pods []corev1.Pod, reports map[string]layout.InstanceStatus) bool {
	for i := range pods {
		pod := &pods[i]
		if pod.Status.PodIP == "" || pod.Status.Phase != corev1.PodRunning || !pod.DeletionTimestamp.IsZero() {
			continue
		}
		report, ok := reports[pod.Name]
		switch {
		case !ok:
			return true
		case report.Role != layout.RoleReplica || report.Fenced:
		case !report.Replicating, report.LagSeconds != nil && *report.LagSeconds >= settledLag:
			return true
		}
	}
	return false
}

// instancePoll is when a Database whose instances report is looked at
// again: soon while they settle, else at the slow poll.
func instancePoll(pods []corev1.Pod, reports map[string]layout.InstanceStatus) time.Duration {
	if instancesSettling(pods, reports) {
		return instanceSettlingPoll
	}
	return instancePollInterval
}

// instanceStatuses are the pods in status.instances, by name.
func instanceStatuses(db *dbpilotv1alpha1.Database, pods []corev1.Pod, reports map[string]layout.InstanceStatus) []dbpilotv1alpha1.InstanceStatus {
	var instances []dbpilotv1alpha1.InstanceStatus
	for i := range pods {
		pod := &pods[i]
		report := reports[pod.Name]
		instance := dbpilotv1alpha1.InstanceStatus{
			Name:           pod.Name,
			Role:           report.Role,
			Ready:          podReady(pod),
			Replicating:    report.Replicating,
			Fenced:         fenced(db, pod),
			PendingRestart: report.PendingRestart,
		}
		if len(instance.PendingRestart) == 0 {
			// Never an empty list: the status does not change with the
			// report's form.
			instance.PendingRestart = nil
		}
		if report.Role == layout.RoleReplica && report.LagSeconds != nil {
			instance.LagSeconds = ptr.To(int64(math.Round(*report.LagSeconds)))
		}
		instances = append(instances, instance)
	}
	// The cache lists pods in no fixed order; the status must not move
	// with it.
	slices.SortFunc(instances, func(a, b dbpilotv1alpha1.InstanceStatus) int { return strings.Compare(a.Name, b.Name) })
	return instances
}

// currentPrimary is the designated primary when it reports itself the
// primary, or "".
func currentPrimary(designated string, reports map[string]layout.InstanceStatus) string {
	if report, ok := reports[designated]; ok && report.Role == layout.RolePrimary {
		return designated
	}
	return ""
}
