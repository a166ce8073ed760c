/* The native half of tests/java/MixedJni.java: a JNI library built with
 * lookback's hooks (-finstrument-functions), so one Java thread's track holds
 * Java method > JNI entry > native functions > Java callback (an upcall) >
 * Java method, all in one ring. Also a native crash under Java frames.
 * Built as libjni_mixed.so by tests/CMakeLists.txt. */
#include <jni.h>

__attribute__((noinline)) int native_inner(JNIEnv* env, jclass cls, int n) {
  jmethodID callback = (*env)->GetStaticMethodID(env, cls, "callback", "(I)I");
  if (callback == NULL) return -1;
  return (*env)->CallStaticIntMethod(env, cls, callback, n) + 1;
}

__attribute__((noinline)) int native_middle(JNIEnv* env, jclass cls, int n) {
  return native_inner(env, cls, n) + 1;
}

JNIEXPORT jint JNICALL Java_MixedJni_nativeWork(JNIEnv* env, jclass cls, jint n) {
  return native_middle(env, cls, n) + 1;
}

volatile int* jni_mixed_null = 0;

__attribute__((noinline)) void native_crash_here(void) { *jni_mixed_null = 42; }

JNIEXPORT void JNICALL Java_MixedJni_crashNative(JNIEnv* env, jclass cls) {
  (void)env;
  (void)cls;
  native_crash_here();
}
