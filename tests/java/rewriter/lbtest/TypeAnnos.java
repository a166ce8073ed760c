package lbtest;

import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Supplier;

// Type annotations inside method code (RuntimeVisibleTypeAnnotations on Code,
// JVMS 4.7.20) of every kind that names a bytecode offset: the rewriter must
// move them with their instructions (rewriter_test.cc checks each one against
// the instruction it names). Not run, only rewritten and parsed.
final class TypeAnnos {
  @Target(ElementType.TYPE_USE)
  @Retention(RetentionPolicy.RUNTIME)
  @interface Tag {
    String value() default "";
  }

  static int annotated(Object x, int n) throws Exception {
    @Tag("local") String s = String.valueOf(n);  // local_variable
    int total = 0;
    for (int i = 0; i < n; i++) {
      if (x instanceof @Tag("instanceof") String) total += i;  // instanceof
      total += ((@Tag("cast") String) String.valueOf(i)).length();  // cast
    }
    List<String> list = new @Tag("new") ArrayList<>();  // new
    list.add(s);
    Supplier<List<String>> make = @Tag("ctor-ref") ArrayList::new;  // constructor reference
    try (@Tag("resource") AutoCloseable c = () -> {}) {  // resource_variable
      total += make.get().size();
    } catch (@Tag("catch") IllegalStateException e) {  // exception_parameter
      total--;
    }
    if (total > 1000) return total;
    return total + list.size();
  }
}
