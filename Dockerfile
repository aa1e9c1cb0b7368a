# Builds neoflow's wheel with both libraries (CPU-only and CUDA) on an
# official CUDA development image, installs it and runs the tests:
#
#   docker build -t neoflow .
#   docker run --gpus all neoflow          # the tests, GPU ones included
#   docker cp $(docker create neoflow):/src/dist .   # the wheel
#
# The build steps are scripts/build-wheel.sh, which CI runs on a plain
# machine; this file only provides the toolchain (Python 3.10, 3.12 and 3.13
# for the test command's fresh environments). No GPU is needed to build.
FROM nvidia/cuda:12.4.1-devel-ubuntu22.04

ARG GO_VERSION=1.24.4
ENV DEBIAN_FRONTEND=noninteractive \
    PATH=/usr/local/go/bin:$PATH \
    CUDA_HOME=/usr/local/cuda \
    NEOFLOW_VENV=/opt/venv

RUN apt-get update && apt-get install -y --no-install-recommends \
        ca-certificates curl git gcc g++ software-properties-common \
    && add-apt-repository -y ppa:deadsnakes/ppa \
    && apt-get update && apt-get install -y --no-install-recommends python3.11 python3.11-venv python3.11-dev \
        python3.10 python3.12 python3.13 \
    && ln -sf /usr/bin/python3.11 /usr/local/bin/python3 \
    && rm -rf /var/lib/apt/lists/*
RUN curl -fsSL "https://go.dev/dl/go${GO_VERSION}.linux-amd64.tar.gz" | tar -C /usr/local -xz

WORKDIR /src
COPY . .
# The virtual environment (PyTorch with its CUDA libraries, NVRTC among
# them) and the wheel with libneoflow.so and libneoflow_cuda.so.
RUN bash scripts/build-wheel.sh

CMD ["bash", "scripts/test.sh"]
