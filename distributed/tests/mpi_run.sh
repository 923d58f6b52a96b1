#!/bin/sh
# Runs a distributed test under mpirun, bounded by a timeout:
#   mpi_run.sh MPIEXEC NP TRANSPORT SECONDS EXPECT PROGRAM [ARGS...]
# TRANSPORT: shm (OpenMPI's shared-memory BTL, vader) or tcp (TCP over the loopback interface,
# so the network path runs on one machine). EXPECT: pass (exit 0) or dies (a non-zero exit, but
# not the timeout's: test_dist_die.c). More ranks than cores are allowed (--oversubscribe), each
# rank runs one thread, and root may run it (OpenMPI refuses root unless told).
set -u
mpiexec=$1 np=$2 transport=$3 seconds=$4 expect=$5
shift 5
case $transport in
shm) btl="--mca btl vader,self --mca btl_vader_single_copy_mechanism none" ;;
tcp) btl="--mca btl tcp,self --mca btl_tcp_if_include lo" ;;
*) echo "mpi_run.sh: unknown transport $transport" >&2; exit 2 ;;
esac
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1 SIMDGRAD_THREADS=1
# shellcheck disable=SC2086 # $btl is a list of options
start=$(date +%s)
timeout -k 10 "$seconds" "$mpiexec" -np "$np" --oversubscribe $btl "$@"
rc=$?
took=$(($(date +%s) - start))
echo "mpi_run.sh: $np ranks over $transport: exit status $rc after $took s"
# mpirun's own status may be 137 too (a rank killed by SIGKILL), so the clock tells a timeout.
if [ "$took" -ge "$seconds" ]; then
  echo "mpi_run.sh: the job hung until the timeout ($seconds s)" >&2; exit 1
fi
case $expect in
pass) exit $rc ;;
dies)
  if [ $rc -eq 0 ]; then echo "mpi_run.sh: the job did not fail" >&2; exit 1; fi
  exit 0 ;;
esac
