# dss_target_defaults(target): warnings as errors and the project's common flags.
function(dss_target_defaults target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Werror -Wno-missing-field-initializers)
  target_compile_features(${target} PUBLIC cxx_std_20)
endfunction()
