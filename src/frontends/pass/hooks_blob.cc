// Embeds the bitcode of inline_hooks.cc (built by CMake) in the plugin, so the
// plugin is one file that cannot be paired with the wrong hot path.
#ifndef LB_PASS_BITCODE
#error "LB_PASS_BITCODE must name the inline_hooks bitcode file"
#endif
#define LB_STR2(x) #x
#define LB_STR(x) LB_STR2(x)
__asm__(".section .rodata\n"
        ".balign 16\n"
        ".globl lb_pass_bitcode\n"
        ".hidden lb_pass_bitcode\n"
        "lb_pass_bitcode:\n"
        ".incbin \"" LB_STR(LB_PASS_BITCODE) "\"\n"
                                             ".globl lb_pass_bitcode_end\n"
                                             ".hidden lb_pass_bitcode_end\n"
                                             "lb_pass_bitcode_end:\n"
                                             ".byte 0\n"
                                             ".previous\n");
