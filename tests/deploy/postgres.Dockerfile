# Stand-in for the official postgres:16-bookworm, from Debian bookworm's PostgreSQL (15), for
# machines that reach Debian's archive but no image registry (tests/test_deploy_live.py). Its
# entrypoint honours POSTGRES_USER / POSTGRES_PASSWORD / POSTGRES_DB like the official image's.
FROM benchwatch-standin/bookworm-minbase
RUN mkdir -p /etc/postgresql-common \
    && echo "create_main_cluster = false" > /etc/postgresql-common/createcluster.conf \
    && apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends postgresql \
    && rm -rf /var/lib/apt/lists/* \
    && ln -s /usr/lib/postgresql/*/bin /usr/lib/postgresql/bin
COPY postgres-entrypoint.sh /usr/local/bin/docker-entrypoint.sh
ENV PATH=/usr/lib/postgresql/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    PGDATA=/var/lib/postgresql/data \
    LANG=C.UTF-8
VOLUME /var/lib/postgresql/data
ENTRYPOINT ["docker-entrypoint.sh"]
STOPSIGNAL SIGINT
EXPOSE 5432
CMD ["postgres"]
