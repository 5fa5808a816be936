package options

import (
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/dbpilot/dbpilot/autopilot/promsource"
	"github.com/dbpilot/dbpilot/controllers"
)

// AutopilotRunner builds the auto-pilot runner for a manager: with a
// Prometheus source when --prometheus-url is set, without one otherwise (the
// auto-pilot then reports it is not ready and holds).
func (o *Options) AutopilotRunner(mgr ctrl.Manager) (*controllers.AutopilotRunner, error) {
	runner := &controllers.AutopilotRunner{
		Client:     mgr.GetClient(),
		Recorder:   mgr.GetEventRecorder(controllers.AutopilotFieldOwner),
		Interval:   o.AutopilotInterval,
		SettleTime: o.AutopilotSettleTime,
		FlapWindow: o.AutopilotFlapWindow,
	}
	if o.PrometheusURL != "" {
		source, err := promsource.New(promsource.Options{
			URL: o.PrometheusURL, BearerTokenFile: o.PrometheusBearerTokenFile, CAFile: o.PrometheusCAFile, Timeout: o.PrometheusTimeout,
			RateWindow: o.PrometheusRateWindow,
		})
		if err != nil {
			return nil, err
		}
		runner.Source = source
	}
	return runner, nil
}
