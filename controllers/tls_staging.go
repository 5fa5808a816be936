package controllers

import (
	"bytes"
	"context"
	"errors"
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
// served, and dropped once no pod serves one only they verify. A replaced
// client authority takes the same steps (stageClientAuthority), the
// application user's certificate in the place of the served one.
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
	// stepReplace puts the wanted authorities in place of those the Secret
	// holds at once, the served certificate unchanged: all are copies of
	// one authority (pki.OneAuthority: it was renewed), so what one
	// verifies, every other does.
	stepReplace
)

// certificateStepFor is the next step from the authorities the Secret
// holds (current) towards a certificate that needs wanted, the served
// certificate changing or not. A renewal under the same authority is a
// serve step at once, since every pod trusts its authority already, and a
// renewed copy of the authority is a replace step.
func certificateStepFor(current, wanted []byte, certificateChanges bool) certificateStep {
	switch {
	case !certificateChanges && !bytes.Equal(current, wanted) && pki.OneAuthority(current, wanted):
		return stepReplace
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

// defaultStageMountTimeout is how long a step waits for every pod to
// report the files of the step before: after it, the step goes on (a
// Warning Event names the pods), so that a certificate near its expiry
// does not wait for a pod whose files are never updated.
const defaultStageMountTimeout = 5 * time.Minute

func (r *DatabaseReconciler) stageMountTimeout() time.Duration {
	if r.StageMountTimeout <= 0 {
		return defaultStageMountTimeout
	}
	return r.StageMountTimeout
}

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
// report. A Secret that does not exist yet, or serves nothing, is written
// as wanted at once.
func (r *DatabaseReconciler) stageServerCertificate(ctx context.Context, s *scope, current *corev1.Secret, change certificateChange) (ctrl.Result, error) {
	db := s.db
	served := pki.KeyPair{CertPEM: current.Data[layout.KeyTLSCert], KeyPEM: current.Data[layout.KeyTLSKey]}
	trusted := current.Data[layout.KeyCACert]
	if current.Name == "" || len(served.CertPEM) == 0 || len(trusted) == 0 {
		// Nothing any pod could verify is served yet: no stages.
		server, err := change.serve()
		if err != nil {
			return ctrl.Result{}, err
		}
		err = r.writeServerCertificate(ctx, db, current, desired.ServerCertificateSecret(db, server, change.authorities, s.clientAuthorities), change.reason, change.action, "%s", change.note)
		return ctrl.Result{}, err
	}
	name := db.ServerCertificateSecretName()
	switch certificateStepFor(trusted, change.authorities, change.changes) {
	case stepReplace:
		// An action of its own, for an Event of its own: the recorder
		// folds Events of the same reason and action into one series.
		err := r.writeServerCertificate(ctx, db, current, desired.ServerCertificateSecret(db, served, change.authorities, s.clientAuthorities),
			dbpilotv1alpha1.EventReasonCertificateAuthorityAdded, "TrustRenewedAuthority",
			"Secret %s trusts the renewed copy of its certificate's authority in place of the former one: the certificate it serves verifies with either", name)
		return ctrl.Result{}, err
	case stepTrust:
		err := r.writeServerCertificate(ctx, db, current, desired.ServerCertificateSecret(db, served, pki.JoinBundles(trusted, change.authorities), s.clientAuthorities),
			dbpilotv1alpha1.EventReasonCertificateAuthorityAdded, "TrustAuthority",
			"Secret %s trusts the new certificate's authorities beside the former ones; the certificate follows once every pod has them", name)
		return ctrl.Result{RequeueAfter: stagePoll}, err
	case stepServe:
		if wait, _, err := r.waitForMounts(ctx, s, current, "the authorities", trusted, func(c layout.CertificateStatus) string { return c.MountedAuthorities }); wait || err != nil {
			return ctrl.Result{RequeueAfter: stagePoll}, err
		}
		server, err := change.serve()
		if err != nil {
			return ctrl.Result{}, err
		}
		// trusted holds the authorities it needs (stepTrust came first).
		if err := r.writeServerCertificate(ctx, db, current, desired.ServerCertificateSecret(db, server, trusted, s.clientAuthorities), change.reason, change.action, "%s", change.note); err != nil {
			return ctrl.Result{}, err
		}
		if !bytes.Equal(trusted, change.authorities) {
			return ctrl.Result{RequeueAfter: stagePoll}, nil
		}
	case stepRetire:
		wait, timedOut, err := r.waitForMounts(ctx, s, current, "the certificate", served.CertPEM, func(c layout.CertificateStatus) string { return c.ServedCertificate })
		if wait || err != nil {
			return ctrl.Result{RequeueAfter: stagePoll}, err
		}
		note := "Every pod serves the certificate in Secret %s: it trusts only that certificate's authorities now"
		if timedOut {
			note = "Secret %s trusts only its certificate's authorities now, though not every pod reported serving that certificate"
		}
		err = r.writeServerCertificate(ctx, db, current, desired.ServerCertificateSecret(db, served, change.authorities, s.clientAuthorities),
			dbpilotv1alpha1.EventReasonCertificateAuthorityRetired, "RetireAuthority", note, name)
		return ctrl.Result{}, err
	}
	return ctrl.Result{}, nil
}

// waitForMounts reports whether a step must wait for pods that have not
// taken content yet (what, for the Events), as each pod's instance program
// reports it whether its engine runs or not (taken: the digest of its
// mounted authorities, or of the certificate its engine serves). A pod
// whose instance program does not answer is not waited for: it serves no
// one, and reads the files as they are when it starts; one from before the
// report (it answers, but not this) is, since it cannot tell. It waits at most
// the stage timeout from the last step, then records a Warning Event that
// names the pods and goes on; timedOut says so.
func (r *DatabaseReconciler) waitForMounts(ctx context.Context, s *scope, current *corev1.Secret, what string, content []byte, taken func(layout.CertificateStatus) string) (wait, timedOut bool, err error) {
	pods := &corev1.PodList{}
	if err := r.Client.List(ctx, pods, client.InNamespace(s.db.Namespace), client.MatchingLabels(s.db.SelectorLabels())); err != nil {
		return false, false, fmt.Errorf("listing pods: %w", err)
	}
	reports := map[string]*layout.CertificateStatus{}
	for i := range pods.Items {
		pod := &pods.Items[i]
		if pod.Status.PodIP == "" || !pod.DeletionTimestamp.IsZero() {
			continue
		}
		// The operator verifies the pods against what the Secret trusts now.
		report, err := readCertificates(ctx, instanceTargetOf(s.db, current.Data[layout.KeyCACert], pod))
		switch {
		case err == nil:
			reports[pod.Name] = &report
		case errors.Is(err, errNotServed):
			reports[pod.Name] = nil
		}
	}
	lagging := podsNotTaking(reports, taken, content)
	if len(lagging) == 0 {
		return false, false, nil
	}
	staged, _ := time.Parse(time.RFC3339, current.Annotations[desired.AnnotationCertificateStaged])
	timeout := r.stageMountTimeout()
	if r.clock().Now().Sub(staged) < timeout {
		return true, false, nil
	}
	r.Recorder.Eventf(s.db, nil, corev1.EventTypeWarning, dbpilotv1alpha1.EventReasonCertificateStagingTimedOut, "StageCertificate",
		"Pods %s did not report %s of Secret %s taken %s after it was written: going on without them", strings.Join(lagging, ", "), what, current.Name, timeout)
	return false, true, nil
}

// podsNotTaking names the pods whose report is not of content taken, or
// that cannot tell (nil). A pod without a certificate mounted (one from
// before dbpilot issued them) is not waited for; one whose engine has not
// yet presented the certificate it serves (no digest taken) is.
func podsNotTaking(reports map[string]*layout.CertificateStatus, taken func(layout.CertificateStatus) string, content []byte) []string {
	want := layout.FileDigest(content)
	var lagging []string
	for pod, report := range reports {
		if report == nil {
			lagging = append(lagging, pod)
			continue
		}
		mountsNone := report.MountedCertificate == "" && report.MountedAuthorities == ""
		if !mountsNone && taken(*report) != want {
			lagging = append(lagging, pod)
		}
	}
	slices.Sort(lagging)
	return lagging
}
