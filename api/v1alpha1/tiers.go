package v1alpha1

import "k8s.io/apimachinery/pkg/api/resource"

// TierSize is what a tier gives each pod. Requests equal limits, so database
// pods get the Guaranteed QoS class and are the last to be evicted.
type TierSize struct {
	// CPU is the CPU request and limit of the database container.
	CPU resource.Quantity
	// Memory is the memory request and limit of the database container; the
	// engine's buffers and caches are sized from it.
	Memory resource.Quantity
	// MaxConnections is the engine's connection limit at this tier.
	MaxConnections int32
	// MaxConnectionsLimit is the most the auto-pilot may raise
	// max_connections to at this tier, when connections saturate while
	// memory has room: twice MaxConnections.
	MaxConnectionsLimit int32
	// Capacity is the relative load one pod of this tier can serve, in the
	// auto-pilot's capacity units (small = 1, doubling with each step).
	Capacity int32
}

// tierOrder lists the tiers from smallest to largest.
var tierOrder = []Tier{TierSmall, TierMedium, TierLarge, TierXLarge, Tier2XLarge}

// tierSizes is the one table of what each tier means:
//
// The auto-pilot may raise max_connections up to twice the table's value.
//
//	tier     CPU  memory  max_connections  capacity
//	small    500m 1Gi     100              1
//	medium   1    2Gi     200              2
//	large    2    4Gi     400              4
//	xlarge   4    8Gi     800              8
//	2xlarge  8    16Gi    1600             16
var tierSizes = map[Tier]TierSize{
	TierSmall:   {CPU: resource.MustParse("500m"), Memory: resource.MustParse("1Gi"), MaxConnections: 100, Capacity: 1},
	TierMedium:  {CPU: resource.MustParse("1"), Memory: resource.MustParse("2Gi"), MaxConnections: 200, Capacity: 2},
	TierLarge:   {CPU: resource.MustParse("2"), Memory: resource.MustParse("4Gi"), MaxConnections: 400, Capacity: 4},
	TierXLarge:  {CPU: resource.MustParse("4"), Memory: resource.MustParse("8Gi"), MaxConnections: 800, Capacity: 8},
	Tier2XLarge: {CPU: resource.MustParse("8"), Memory: resource.MustParse("16Gi"), MaxConnections: 1600, Capacity: 16},
}

func init() {
	for tier, size := range tierSizes {
		size.MaxConnectionsLimit = 2 * size.MaxConnections
		tierSizes[tier] = size
	}
}

// Tiers returns every tier, smallest first.
func Tiers() []Tier {
	return append([]Tier(nil), tierOrder...)
}

// Size returns what the tier gives each pod, and false for an unknown tier.
func (t Tier) Size() (TierSize, bool) {
	size, ok := tierSizes[t]
	return size, ok
}

// Index returns the tier's position from smallest (0) to largest, or -1 for an
// unknown tier.
func (t Tier) Index() int {
	for i, known := range tierOrder {
		if known == t {
			return i
		}
	}
	return -1
}

// TierAt returns the tier at index i of Tiers, clamped to the known tiers.
func TierAt(i int) Tier {
	return tierOrder[max(0, min(i, len(tierOrder)-1))]
}
