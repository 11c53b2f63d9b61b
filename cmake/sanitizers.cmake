# DSS_SANITIZE=address,undefined | undefined | thread applies to every target.
if(DSS_SANITIZE)
  add_compile_options(-fsanitize=${DSS_SANITIZE} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  add_link_options(-fsanitize=${DSS_SANITIZE})
  add_compile_definitions(DSS_DCHECK_ON=1)
endif()
