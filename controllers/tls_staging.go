package controllers

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
	"github.com/dbpilot/dbpilot/controllers/desired"
	"github.com/dbpilot/dbpilot/instance/layout"
	"github.com/dbpilot/dbpilot/internal/pki"
)

// certificateStep is the next write of the Secret the pods mount on the way
// from the certificate they serve to another (certificateStepFor). The
// steps keep every certificate a pod serves trusted by every pod and by the
// operator: authorities are added before a certificate they sign is
// served, and dropped once no pod serves one only they verify.
type certificateStep int

const (
	// stepNone: the Secret holds what is wanted.
	stepNone certificateStep = iota
	// stepTrust adds the authorities the wanted certificate needs to
	// those the Secret holds, the served certificate unchanged.
	stepTrust
	// stepServe serves the wanted certificate, still trusting the former
	// authorities; once every pod has the authorities that verify it.
	stepServe
	// stepRetire drops the authorities the served certificate does not
	// need; once every pod serves it.
	stepRetire
)

// certificateStepFor is the next step from the authorities the Secret
// holds (current) towards a certificate that needs wanted, the served
// certificate changing or not. A renewal under the same authority is a
// serve step at once, since every pod trusts its authority already.
func certificateStepFor(current, wanted []byte, certificateChanges bool) certificateStep {
	switch {
	case !pki.BundleContains(current, wanted):
		return stepTrust
	case certificateChanges:
		return stepServe
	case !bytes.Equal(current, wanted):
		return stepRetire
	}
	return stepNone
}

// stagePoll is how soon a staged change looks again at what the pods
// have mounted: the kubelet updates a mounted Secret within about a minute.
const stagePoll = 5 * time.Second

// stageMountTimeout is how long a step waits for every pod to report the
// files of the step before: after it, the step goes on (a Warning Event
// names the pods), so that a certificate near its expiry does not wait for
// a pod whose files are never updated.
const stageMountTimeout = 5 * time.Minute

// certificateChange is where the Secret the pods mount should go.
type certificateChange struct {
	// authorities are the authorities the wanted certificate needs.
	authorities []byte
	// changes says the served certificate changes; serve gives the new one.
	changes bool
	serve   func() (pki.KeyPair, error)
	// reason, action and note are the Event of serving it.
	reason, action, note string
}

// stageServerCertificate takes the Secret the pods mount (current) one step
// towards change (certificateStepFor), once the pods have mounted what the
// step builds on: the operator's own trust follows the Secret at once, the
// pods' as the kubelet updates their files, which their instance programs
// report. A Secret that does not exist yet is created as wanted.
func (r *DatabaseReconciler) stageServerCertificate(ctx context.Context, s *scope, current *corev1.Secret, change certificateChange) (ctrl.Result, error) {
	db := s.db
	if current.Name == "" {
		server, err := change.serve()
		if err != nil {
			return ctrl.Result{}, err
		}
		err = r.writeServerCertificate(ctx, db, current, desired.ServerCertificateSecret(db, server, change.authorities), "", "", "")
		return ctrl.Result{}, err
	}
	served := pki.KeyPair{CertPEM: current.Data[layout.KeyTLSCert], KeyPEM: current.Data[layout.KeyTLSKey]}
	trusted := current.Data[layout.KeyCACert]
	name := db.ServerCertificateSecretName()
	switch certificateStepFor(trusted, change.authorities, change.changes) {
	case stepTrust:
		err := r.writeServerCertificate(ctx, db, current, desired.ServerCertificateSecret(db, served, pki.JoinBundles(trusted, change.authorities)),
			dbpilotv1alpha1.EventReasonCertificateAuthorityAdded, "TrustAuthority",
			"Secret %s trusts the new certificate's authorities beside the former ones; the certificate follows once every pod has them", name)
		return ctrl.Result{RequeueAfter: stagePoll}, err
	case stepServe:
		if wait, err := r.waitForMounts(ctx, s, current, "the authorities", trusted, func(i layout.InstanceStatus) string { return i.MountedAuthorities }); wait || err != nil {
			return ctrl.Result{RequeueAfter: stagePoll}, err
		}
		server, err := change.serve()
		if err != nil {
			return ctrl.Result{}, err
		}
		joined := pki.JoinBundles(trusted, change.authorities)
		if err := r.writeServerCertificate(ctx, db, current, desired.ServerCertificateSecret(db, server, joined), change.reason, change.action, "%s", change.note); err != nil {
			return ctrl.Result{}, err
		}
		if !bytes.Equal(joined, change.authorities) {
			return ctrl.Result{RequeueAfter: stagePoll}, nil
		}
	case stepRetire:
		if wait, err := r.waitForMounts(ctx, s, current, "the certificate", served.CertPEM, func(i layout.InstanceStatus) string { return i.MountedCertificate }); wait || err != nil {
			return ctrl.Result{RequeueAfter: stagePoll}, err
		}
		err := r.writeServerCertificate(ctx, db, current, desired.ServerCertificateSecret(db, served, change.authorities),
			dbpilotv1alpha1.EventReasonCertificateAuthorityRetired, "RetireAuthority",
			"Every pod serves the certificate in Secret %s: it trusts only that certificate's authorities now", name)
		return ctrl.Result{}, err
	}
	return ctrl.Result{}, nil
}

// waitForMounts reports whether a step must wait for pods that have not
// mounted content yet (what, for the Event): each running pod's instance
// program reports the digest of its mounted file. It waits at most
// stageMountTimeout from the last step, then records a Warning Event that
// names the pods and goes on.
func (r *DatabaseReconciler) waitForMounts(ctx context.Context, s *scope, current *corev1.Secret, what string, content []byte, mounted func(layout.InstanceStatus) string) (bool, error) {
	pods := &corev1.PodList{}
	if err := r.Client.List(ctx, pods, client.InNamespace(s.db.Namespace), client.MatchingLabels(s.db.SelectorLabels())); err != nil {
		return false, fmt.Errorf("listing pods: %w", err)
	}
	// The operator verifies the pods against what the Secret trusts now.
	reports := readInstances(ctx, &scope{db: s.db, pods: pods.Items, instanceAuthority: current.Data[layout.KeyCACert]})
	lagging := podsNotMounting(reports, mounted, content)
	if len(lagging) == 0 {
		return false, nil
	}
	staged, _ := time.Parse(time.RFC3339, current.Annotations[desired.AnnotationCertificateStaged])
	if r.clock().Now().Sub(staged) < stageMountTimeout {
		return true, nil
	}
	r.Recorder.Eventf(s.db, nil, corev1.EventTypeWarning, dbpilotv1alpha1.EventReasonCertificateStagingTimedOut, "StageCertificate",
		"Pods %s still do not report %s of Secret %s mounted %s after it was written: going on without them", strings.Join(lagging, ", "), what, current.Name, stageMountTimeout)
	return false, nil
}

// podsNotMounting names the pods whose instance program reports a mounted
// file (mounted) other than content. Pods that do not answer are not waited
// for, nor those that report no file (none mounted yet, or an instance
// program from before the report).
func podsNotMounting(reports map[string]layout.InstanceStatus, mounted func(layout.InstanceStatus) string, content []byte) []string {
	want := layout.FileDigest(content)
	var lagging []string
	for pod, report := range reports {
		if digest := mounted(report); digest != "" && digest != want {
			lagging = append(lagging, pod)
		}
	}
	slices.Sort(lagging)
	return lagging
}
