# A stand-in for an SGLang image, built offline by tests/real/test_docker.py (tests/real/dockerkit.py)
# on the Debian base image it makes with debootstrap. The context holds wheelhouse/ (every Python
# package a build needs: sgpatch's dependencies, setuptools, setuptools-scm, wheel) and sglang/
# (the release wheel for LAYOUT=site-packages, the release's sdist for LAYOUT=checkout, nothing for
# LAYOUT=none). pip never reaches an index: PIP_NO_INDEX=1, PIP_FIND_LINKS=/wheelhouse, and the
# build runs with --network=none. Image builds FROM it see the same pip settings.
ARG BASE
FROM ${BASE}
COPY wheelhouse/ /wheelhouse/
ENV PIP_NO_INDEX=1 PIP_FIND_LINKS=/wheelhouse PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1
RUN python3 -m venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH VIRTUAL_ENV=/opt/venv
# site-packages: `pip install sglang==V` (the release wheel, without its torch/CUDA dependencies).
# checkout: as the lmsysorg/sglang images have it, an editable install of a source tree at
# /sgl-workspace/sglang/python (here the release's sdist, which unpacks to that python/ layout).
ARG LAYOUT
COPY sglang/ /tmp/sglang/
RUN set -e; case "$LAYOUT" in \
      site-packages) pip install --no-deps /tmp/sglang/sglang-*.whl ;; \
      checkout) mkdir -p /sgl-workspace/sglang/python \
        && tar -xzf /tmp/sglang/sglang-*.tar.gz --strip-components=1 -C /sgl-workspace/sglang/python \
        && pip install --upgrade setuptools setuptools-scm wheel \
        && pip install --no-deps --no-build-isolation -e /sgl-workspace/sglang/python ;; \
      none) ;; \
      *) echo "LAYOUT=$LAYOUT: site-packages, checkout or none" >&2; exit 2 ;; \
    esac; rm -rf /tmp/sglang
# EDIT_GATE=1: a local change where sm120-flashinfer-allreduce-fusion needs its context (the first
# `(_is_sm90_supported or _is_sm100_supported)` of srt/layers/communicator.py gets a third term).
ARG EDIT_GATE=
RUN if [ -n "$EDIT_GATE" ]; then set -e; \
      for f in /opt/venv/lib/python3*/site-packages/sglang/srt/layers/communicator.py \
               /sgl-workspace/sglang/python/sglang/srt/layers/communicator.py; do \
        [ -f "$f" ] && break; done; \
      sed -i '0,/(_is_sm90_supported or _is_sm100_supported)/s//(_is_sm90_supported or _is_sm100_supported or _is_hopper_plus)/' "$f"; \
      grep -n '_is_sm100_supported or _is_hopper_plus)' "$f"; fi
