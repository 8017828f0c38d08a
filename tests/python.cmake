# The Python package (python/): its pytest suite under `weft run` at
# P = 1..4, ranks that disagree, weft over mpi4py under mpirun, installing,
# and the training example.  The interpreter is Debian's (WEFT_PYTHON,
# /usr/bin/python3 by default, set in the top CMakeLists.txt), which sees
# python3-numpy, -pytest, -mpi4py and -torch (tests/deps.sh installs them),
# not the python3 first on PATH (pyenv's, say, which does not).
set(PY_ENV "WEFT_LIBRARY=$<TARGET_FILE:weft>;WEFT_BIN=$<TARGET_FILE:weft_tool>;PYTHONDONTWRITEBYTECODE=1")
set(PY_TESTS ${CMAKE_SOURCE_DIR}/python/tests)
foreach(np 1 2 3 4)
  # at 4 ranks, two virtual nodes: hier and hier_pap split for real
  set(nodes "")
  if(np EQUAL 4)
    set(nodes ";WEFT_NODE_SIZE=2")
  endif()
  add_test(NAME python_np${np} COMMAND ${WEFT} run -n ${np} ${WEFT_PYTHON} -m pytest -q
           -p no:cacheprovider ${PY_TESTS})
  set_tests_properties(python_np${np} PROPERTIES ENVIRONMENT "${PY_ENV}${nodes}" TIMEOUT 300
                       LABELS "python")
endforeach()
foreach(np 2 3)
  foreach(case count dtype root skip algo tensor backend)
    # every rank must end in the error: P lines "CASE ok"
    set(want "${case} ok")
    foreach(i RANGE 2 ${np})
      string(APPEND want ".*${case} ok")
    endforeach()
    add_test(NAME python_mismatch_${case}_np${np} COMMAND ${WEFT} run -n ${np} ${WEFT_PYTHON}
             ${PY_TESTS}/check_mismatch.py ${case})
    set_tests_properties(python_mismatch_${case}_np${np} PROPERTIES ENVIRONMENT "${PY_ENV}"
                         TIMEOUT 60 LABELS "python;errors" PASS_REGULAR_EXPRESSION "${want}")
  endforeach()
endforeach()
if(MPI_C_FOUND)
  foreach(np 2 3)
    add_test(NAME python_mpi_np${np} COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${np}
             ${WEFT_PYTHON} ${PY_TESTS}/check_mpi.py)
    set_tests_properties(python_mpi_np${np} PROPERTIES ENVIRONMENT "${MPI_ENV};${PY_ENV}"
                         TIMEOUT 120 LABELS "python;mpi" PASS_REGULAR_EXPRESSION "all ok")
  endforeach()
endif()
add_test(NAME python_install COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/py_install.sh
         ${CMAKE_BINARY_DIR} ${CMAKE_SOURCE_DIR} ${WEFT_PYTHON})
set_tests_properties(python_install PROPERTIES TIMEOUT 300 LABELS "python"
                     PASS_REGULAR_EXPRESSION " passed, 0 failed")
foreach(np 2 3)
  add_test(NAME python_train_np${np} COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/py_train.sh ${WEFT}
           ${WEFT_PYTHON} ${CMAKE_SOURCE_DIR} ${np})
  set_tests_properties(python_train_np${np} PROPERTIES ENVIRONMENT "${PY_ENV}" TIMEOUT 300
                       LABELS "python" PASS_REGULAR_EXPRESSION "same loss and parameters")
endforeach()
foreach(how finalize exit)
  # and the job's exit status 0: every rank left weft cleanly
  add_test(NAME python_hook_${how}_np2 COMMAND bash -c "\"$0\" run -n 2 \"$1\" \"$2\" $3; echo \"weft run: exit $?\""
           ${WEFT} ${WEFT_PYTHON} ${PY_TESTS}/check_hook_exit.py ${how})
  set_tests_properties(python_hook_${how}_np2 PROPERTIES ENVIRONMENT "${PY_ENV}" TIMEOUT 60
                       LABELS "python"
                       PASS_REGULAR_EXPRESSION "hook exit ok.*hook exit ok.*weft run: exit 0")
endforeach()
