# Stand-in used only while recording: the suites require pry for debugging only.
class Binding
  def pry; end
end
