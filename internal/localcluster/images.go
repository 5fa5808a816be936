package localcluster

import (
	"context"
	"fmt"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/dbpilot/dbpilot/internal/imagecatalog"
	"github.com/dbpilot/dbpilot/internal/localimages"
)

// PushDbpilotImages builds the operator's image from the repository and the
// engine images this machine's Debian packages provide (PostgreSQL 15,
// MariaDB 10.11), pushes them to the real node's registry under their real
// names, and returns the image catalog that runs them.
func (c *Cluster) PushDbpilotImages(ctx context.Context) (imagecatalog.Catalog, error) {
	root, err := RepoRoot()
	if err != nil {
		return imagecatalog.Catalog{}, err
	}
	cache := c.cfg.ImageCacheDir
	builds := []struct {
		name  string
		build func() (v1.Image, error)
	}{
		{localimages.OperatorImage, func() (v1.Image, error) { return localimages.Operator(root, cache) }},
		{localimages.PostgresImage, func() (v1.Image, error) { return localimages.Postgres15(cache) }},
		{localimages.MariaDBImage, func() (v1.Image, error) { return localimages.MariaDB1011(cache) }},
	}
	for _, b := range builds {
		start := time.Now()
		img, err := b.build()
		if err != nil {
			return imagecatalog.Catalog{}, fmt.Errorf("building %s: %w", b.name, err)
		}
		if err := c.PushImage(ctx, b.name, img); err != nil {
			return imagecatalog.Catalog{}, err
		}
		c.cfg.Progress(fmt.Sprintf("image %s built and pushed in %.1fs", b.name, time.Since(start).Seconds()))
	}
	return imagecatalog.FromEnvironment([]string{
		imagecatalog.EnvPrefix + imagecatalog.InstanceKey + "=" + localimages.OperatorImage,
		imagecatalog.EnvPrefix + imagecatalog.Key("postgres", "15") + "=" + localimages.PostgresImage,
		imagecatalog.EnvPrefix + imagecatalog.Key("mariadb", "10.11") + "=" + localimages.MariaDBImage,
	})
}
