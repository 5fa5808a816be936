package controllers

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
	"github.com/dbpilot/dbpilot/instance/layout"
	"github.com/dbpilot/dbpilot/internal/pki"
)

// The operator's own series, served with controller-runtime's on the
// manager's authenticated metrics endpoint. Labels name Kubernetes objects
// and enumerations only, never a value from a Secret or a spec string.
var (
	reconcileDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "dbpilot_reconcile_duration_seconds",
		Help:    "Time one reconcile pass of a Database (controller database) or a DatabaseBackup (controller databasebackup) took, by controller and result (success, requeue, error).",
		Buckets: []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30},
	}, []string{"controller", "result"})
	reconcileErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "dbpilot_reconcile_errors_total",
		Help: "Reconcile passes that returned an error, by controller.",
	}, []string{"controller"})
	autopilotDecisions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "dbpilot_autopilot_decisions_total",
		Help: "New recommendations of the auto-pilot, by Database, action and reason.",
	}, []string{"namespace", "database", "action", "reason"})
	failovers = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "dbpilot_failovers_total",
		Help: "Failovers dbpilot decided: a replica designated to replace a lost primary, by namespace, database and engine.",
	}, []string{"namespace", "database", "engine"})
	backupLastSuccess = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "dbpilot_backup_last_success_timestamp_seconds",
		Help: "When the newest completed backup of a Database finished, in seconds since the epoch; absent before its first.",
	}, []string{"namespace", "database", "engine"})
	backupLastFailure = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "dbpilot_backup_last_failure_timestamp_seconds",
		Help: "When the newest failed backup of a Database ended, in seconds since the epoch; absent when none failed.",
	}, []string{"namespace", "database", "engine"})
	serverCertificateExpiry = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "dbpilot_server_certificate_expiry_timestamp_seconds",
		Help: "When the first certificate of the Secret a Database's pods mount (<name>-tls: the server certificate, dbpilot's or a copy of the user's, its intermediates and the authority's) expires, in seconds since the epoch; absent while there is none.",
	}, []string{"namespace", "database"})
	clientCertificateExpiry = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "dbpilot_client_certificate_expiry_timestamp_seconds",
		Help: "When the application user's client certificate (<name>-app-tls) stops verifying, in seconds since the epoch: its expiry, or its authority's (as the pods trust it in client-ca.crt of <name>-tls) when that comes first; absent while dbpilot keeps no such certificate.",
	}, []string{"namespace", "database"})
	autopilotHolding = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "dbpilot_autopilot_holding",
		Help: "1 while the auto-pilot of a Database cannot decide (no Prometheus, missing or stale metrics), with the reason; absent otherwise.",
	}, []string{"namespace", "database", "reason"})
	databaseHibernated = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "dbpilot_database_hibernated",
		Help: "1 while a Database hibernates (spec.hibernate: its pods stop on purpose, and no backup runs); absent otherwise.",
	}, []string{"namespace", "database"})
	databaseDegraded = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "dbpilot_database_degraded",
		Help: "1 while a Database's Degraded condition is True, with the condition's reason (the first problem it names: UsersRefused, ParametersRefused, ReplicasNotReady, ...); absent otherwise.",
	}, []string{"namespace", "database", "reason"})
	databaseUsers = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "dbpilot_database_users",
		Help: "How many users of a Database's status.users (those of spec.users and those removed from it) are in each state: Pending, Ready, Failed, Locked or Expired; absent for a Database without users.",
	}, []string{"namespace", "database", "state"})
	primaryDrainWaiting = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "dbpilot_primary_drain_waiting",
		Help: "1 while a Database's primary runs on a node being drained and no replica on another node can take over yet, so its budget holds the drain back; absent otherwise.",
	}, []string{"namespace", "database", "node"})
)

// The controller label of the reconcile series: the names the controllers
// are registered under.
const (
	databaseControllerName = "database"
	backupControllerName   = "databasebackup"
)

var registerOnce sync.Once

// RegisterMetrics adds dbpilot's series to controller-runtime's registry,
// which the manager serves; once per process, however many managers it runs.
func RegisterMetrics() (err error) {
	registerOnce.Do(func() {
		for _, c := range []prometheus.Collector{reconcileDuration, reconcileErrors, failovers, autopilotDecisions, autopilotHolding, databaseHibernated, databaseDegraded, databaseUsers, primaryDrainWaiting, backupLastSuccess, backupLastFailure, serverCertificateExpiry, clientCertificateExpiry, databasePhases} {
			if err = metrics.Registry.Register(c); err != nil {
				return
			}
		}
		// A counter that exists from the start has a rate of 0, not none.
		reconcileErrors.WithLabelValues(databaseControllerName)
		reconcileErrors.WithLabelValues(backupControllerName)
	})
	return err
}

// observeReconcile records one pass of a controller: an error, a requeue or
// a success.
func observeReconcile(controller string, started time.Time, result ctrl.Result, err error) {
	outcome := "success"
	switch {
	case err != nil:
		outcome = "error"
		reconcileErrors.WithLabelValues(controller).Inc()
	case result.RequeueAfter > 0:
		outcome = "requeue"
	}
	reconcileDuration.WithLabelValues(controller, outcome).Observe(time.Since(started).Seconds())
}

// forgetDatabaseMetrics drops every series of a Database that is gone.
func forgetDatabaseMetrics(key types.NamespacedName) {
	databasePhases.forget(key)
	setAutopilotHolding(key, "")
	setHibernated(key, false)
	setDegraded(key, nil)
	setUserStates(key, nil)
	setDrainWaiting(key, "")
	setBackupTimes(key, "", nil, nil)
	setServerCertificateExpiry(key, &corev1.Secret{})
	setClientCertificateExpiry(key, &corev1.Secret{}, &corev1.Secret{})
	autopilotDecisions.DeletePartialMatch(prometheus.Labels{"namespace": key.Namespace, "database": key.Name})
}

// setAutopilotHolding keeps dbpilot_autopilot_holding to the one reason the
// Database's auto-pilot holds for, or none.
func setAutopilotHolding(key types.NamespacedName, reason string) {
	autopilotHolding.DeletePartialMatch(prometheus.Labels{"namespace": key.Namespace, "database": key.Name})
	if reason != "" {
		autopilotHolding.WithLabelValues(key.Namespace, key.Name, reason).Set(1)
	}
}

// setHibernated keeps dbpilot_database_hibernated to whether the Database
// hibernates.
func setHibernated(key types.NamespacedName, hibernates bool) {
	if hibernates {
		databaseHibernated.WithLabelValues(key.Namespace, key.Name).Set(1)
		return
	}
	databaseHibernated.DeleteLabelValues(key.Namespace, key.Name)
}

// degradedReasons is the reason dbpilot_database_degraded last served for
// each Database, by key.
var degradedReasons sync.Map

// setDegraded keeps dbpilot_database_degraded to the reason of the
// Database's Degraded condition while it is True, or none. The new series
// is set before the former one goes, so that no scrape finds neither (an
// alert's clock would start again).
func setDegraded(key types.NamespacedName, conditions []metav1.Condition) {
	reason := ""
	if degraded := meta.FindStatusCondition(conditions, dbpilotv1alpha1.ConditionDegraded); degraded != nil && degraded.Status == metav1.ConditionTrue {
		reason = degraded.Reason
		databaseDegraded.WithLabelValues(key.Namespace, key.Name, reason).Set(1)
	}
	if former, ok := degradedReasons.Swap(key, reason); ok && former != reason {
		databaseDegraded.DeleteLabelValues(key.Namespace, key.Name, former.(string))
	}
	if reason == "" {
		degradedReasons.Delete(key)
	}
}

// userStates are the states dbpilot_database_users counts, every one
// present (0 included) while the Database has users, so that a dashboard
// or an alert reads a state that none is in as 0, not as nothing.
var userStates = []dbpilotv1alpha1.UserState{dbpilotv1alpha1.UserPending, dbpilotv1alpha1.UserReady, dbpilotv1alpha1.UserFailed, dbpilotv1alpha1.UserLocked, dbpilotv1alpha1.UserExpired}

// setUserStates keeps dbpilot_database_users to how many of the Database's
// users are in each state (each series set in place); without users the
// series go.
func setUserStates(key types.NamespacedName, users []dbpilotv1alpha1.UserStatus) {
	if len(users) == 0 {
		databaseUsers.DeletePartialMatch(prometheus.Labels{"namespace": key.Namespace, "database": key.Name})
		return
	}
	counts := map[dbpilotv1alpha1.UserState]float64{}
	for _, user := range users {
		counts[user.State]++
	}
	for _, state := range userStates {
		databaseUsers.WithLabelValues(key.Namespace, key.Name, string(state)).Set(counts[state])
	}
}

// setDrainWaiting keeps dbpilot_primary_drain_waiting to the node whose
// drain the Database's primary holds back, or none.
func setDrainWaiting(key types.NamespacedName, node string) {
	primaryDrainWaiting.DeletePartialMatch(prometheus.Labels{"namespace": key.Namespace, "database": key.Name})
	if node != "" {
		primaryDrainWaiting.WithLabelValues(key.Namespace, key.Name, node).Set(1)
	}
}

// setBackupTimes keeps dbpilot_backup_last_success_timestamp_seconds and
// dbpilot_backup_last_failure_timestamp_seconds to the Database's newest
// completed and failed backups; nil removes a series.
func setBackupTimes(key types.NamespacedName, engine dbpilotv1alpha1.Engine, success, failure *time.Time) {
	for gauge, at := range map[*prometheus.GaugeVec]*time.Time{backupLastSuccess: success, backupLastFailure: failure} {
		gauge.DeletePartialMatch(prometheus.Labels{"namespace": key.Namespace, "database": key.Name})
		if at != nil {
			gauge.WithLabelValues(key.Namespace, key.Name, string(engine)).Set(float64(at.Unix()))
		}
	}
}

// setServerCertificateExpiry keeps
// dbpilot_server_certificate_expiry_timestamp_seconds to the earliest
// expiry among the certificates of the Secret the Database's pods mount
// (served, its intermediates, the authority's); without one the series
// goes.
func setServerCertificateExpiry(key types.NamespacedName, secret *corev1.Secret) {
	notAfter, err := pki.EarliestExpiry(secret.Data[layout.KeyTLSCert], secret.Data[layout.KeyCACert])
	if err != nil {
		serverCertificateExpiry.DeleteLabelValues(key.Namespace, key.Name)
		return
	}
	serverCertificateExpiry.WithLabelValues(key.Namespace, key.Name).Set(float64(notAfter.Unix()))
}

// setClientCertificateExpiry keeps
// dbpilot_client_certificate_expiry_timestamp_seconds to when the
// application user's certificate (application, <name>-app-tls) stops
// verifying: when it expires, or before that when its authority does, as
// the pods trust it (server, <name>-tls: the client authorities that
// signed it; the others, such as one being retired, do not count), else
// as the certificate's Secret carries it. Without the certificate the
// series goes.
func setClientCertificateExpiry(key types.NamespacedName, application, server *corev1.Secret) {
	certificate := application.Data[layout.KeyTLSCert]
	notAfter, err := pki.VerifiedUntil(certificate, server.Data[layout.KeyClientCACert], application.Data[layout.KeyCACert])
	if len(certificate) == 0 || err != nil {
		clientCertificateExpiry.DeleteLabelValues(key.Namespace, key.Name)
		return
	}
	clientCertificateExpiry.WithLabelValues(key.Namespace, key.Name).Set(float64(notAfter.Unix()))
}

var databasesDesc = prometheus.NewDesc("dbpilot_databases",
	"Databases the operator runs, by namespace, engine and phase.",
	[]string{"namespace", "engine", "phase"}, nil)

// databasePhases is every reconciled Database's engine and phase, as its
// last status write left it; dbpilot_databases counts them when scraped.
var databasePhases = &phaseBook{dbs: map[types.NamespacedName][2]string{}}

type phaseBook struct {
	mu  sync.Mutex
	dbs map[types.NamespacedName][2]string
}

// record notes a Database's engine and phase.
func (b *phaseBook) record(key types.NamespacedName, engine dbpilotv1alpha1.Engine, phase dbpilotv1alpha1.Phase) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.dbs[key] = [2]string{string(engine), string(phase)}
}

// forget drops a Database that is gone.
func (b *phaseBook) forget(key types.NamespacedName) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.dbs, key)
}

func (b *phaseBook) Describe(ch chan<- *prometheus.Desc) { ch <- databasesDesc }

func (b *phaseBook) Collect(ch chan<- prometheus.Metric) {
	b.mu.Lock()
	counts := map[[3]string]float64{}
	for key, ep := range b.dbs {
		phase := ep[1]
		if phase == "" {
			phase = "Unknown"
		}
		counts[[3]string{key.Namespace, ep[0], phase}]++
	}
	b.mu.Unlock()
	for k, n := range counts {
		ch <- prometheus.MustNewConstMetric(databasesDesc, prometheus.GaugeValue, n, k[0], k[1], k[2])
	}
}
