# The file-based catalog image, served by opm. Built where a container
# engine exists: make catalog-build CATALOG_IMG=...
FROM quay.io/operator-framework/opm:v1.69.0
ENTRYPOINT ["/bin/opm"]
CMD ["serve", "/configs", "--cache-dir=/tmp/cache"]
ADD catalog /configs
RUN ["/bin/opm", "serve", "/configs", "--cache-dir=/tmp/cache", "--cache-only"]
LABEL operators.operatorframework.io.index.configs.v1=/configs
