// Package autopilot is dbpilot's decision engine: from observed metrics, the
// current replicas and tier, the owner's policy and the time, it decides
// whether to scale replicas, change tier or grow storage, within the bounds
// of spec.autopilot. It is a pure package; the Prometheus source and the
// runner that writes status.autopilot live beside it.
package autopilot
