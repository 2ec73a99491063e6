# Stand-in for the official python:3.11-slim, built from Debian bookworm's own packages, for
# machines that reach Debian's archive but no image registry (tests/test_deploy_live.py). Only the
# test builds it; the project's Dockerfile names the official image.
FROM benchwatch-standin/bookworm-minbase
ENV DEBIAN_FRONTEND=noninteractive
RUN apt-get update \
    && apt-get install -y --no-install-recommends python3 python3-venv python3-pip passwd ca-certificates \
    && rm -rf /var/lib/apt/lists/* \
    && ln -s /usr/bin/python3 /usr/local/bin/python \
    && ln -s /usr/bin/python3 /usr/local/bin/python3 \
    && ln -s /usr/bin/pip3 /usr/local/bin/pip \
    && rm -f /usr/lib/python3.*/EXTERNALLY-MANAGED
# This machine's CA bundle (TLS interception): pip and apt in images built on it must trust it.
COPY host-ca-bundle.crt /usr/local/share/ca-certificates/host-ca-bundle.crt
RUN if [ -s /usr/local/share/ca-certificates/host-ca-bundle.crt ]; then \
        cp /usr/local/share/ca-certificates/host-ca-bundle.crt /etc/ssl/certs/ca-certificates.crt; fi
ENV DEBIAN_FRONTEND= \
    PATH=/usr/local/bin:/usr/local/sbin:/usr/sbin:/usr/bin:/sbin:/bin \
    LANG=C.UTF-8 \
    PIP_CERT=/etc/ssl/certs/ca-certificates.crt \
    SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt
CMD ["python3"]
